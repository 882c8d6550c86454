//! Which files OPTIMIZE reclusters on a clustered table, as Delta on Spark's
//! `ClusteringStrategy` picks them (spec "Clustered Table": an implementation reclusters only
//! unclustered files and its own, E8-06).
//!
//! Every OPTIMIZE run writes its files as "ZCubes": each bin of files it rewrites becomes one
//! cube, its files tagged with the cube's id (`ZCUBE_ID`) and the columns it was clustered by
//! (`ZCUBE_ZORDER_BY`), and `clusteringProvider` `liquid`. A later run takes:
//! - unclustered files (no cube), and cubes of `liquid` files clustered by today's columns
//!   smaller than [`MIN_CUBE_SIZE`] (a full cube is left alone: clustering is incremental);
//! - unless that is a single cube and nothing else (already clustered as well as it gets);
//! - with `full` (`OPTIMIZE FULL`), also every file clustered by other columns or by another
//!   provider.
//!
//! The files taken, unclustered first, are packed in order into cubes of up to
//! [`TARGET_CUBE_SIZE`] bytes; each cube is rewritten even when it is one file.

use super::{Candidate, DEFAULT_OPTIMIZE_FILE_SIZE};
use crate::table_config::clustering::LIQUID_PROVIDER;

/// Spark's `optimize.clustering.mergeStrategy.minCubeSize.threshold`: a cube this large
/// takes no more files (100 times the default file size, 100 GiB).
pub(crate) const MIN_CUBE_SIZE: u64 = 100 * DEFAULT_OPTIMIZE_FILE_SIZE;
/// Spark's `optimize.clustering.mergeStrategy.minCubeSize.targetCubeSize`: the size a new
/// cube is filled to (1.5 times [`MIN_CUBE_SIZE`]).
pub(crate) const TARGET_CUBE_SIZE: u64 = MIN_CUBE_SIZE / 2 * 3;

/// The cube a file belongs to, from its tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cube {
    /// `ZCUBE_ID`.
    pub(crate) id: String,
    /// `ZCUBE_ZORDER_BY`, parsed: the logical names of the columns it was clustered by.
    pub(crate) columns: Vec<String>,
}

impl Cube {
    /// The cube named by the `ZCUBE_ID` and `ZCUBE_ZORDER_BY` tag values, when both are
    /// there (an unparsable column list counts as no cube, as an unclustered file).
    pub(crate) fn from_tags(id: Option<String>, columns: Option<String>) -> Option<Cube> {
        let columns = serde_json::from_str::<Vec<String>>(&columns?).ok()?;
        Some(Cube { id: id?, columns })
    }
}

/// The files of `files` (every live file of the table) to recluster by `columns` (logical
/// names), unclustered first, as the module documentation describes.
pub(crate) fn select(mut files: Vec<Candidate>, columns: &[String], full: bool) -> Vec<Candidate> {
    files.sort_by(|a, b| cube_id(a).cmp(&cube_id(b)));
    let (ours, others): (Vec<Candidate>, Vec<Candidate>) = files.into_iter().partition(|file| {
        let provider_ok = file
            .provider
            .as_deref()
            .is_none_or(|provider| provider == LIQUID_PROVIDER);
        let same_columns = file
            .cube
            .as_ref()
            .is_none_or(|cube| cube.columns == columns);
        provider_ok && same_columns
    });
    let open = without_full_cubes(ours);
    if full && !others.is_empty() {
        open.into_iter().chain(others).collect()
    } else if is_one_cube(&open) {
        Vec::new()
    } else {
        open
    }
}

/// Packs `files`, in order, into cubes of up to [`TARGET_CUBE_SIZE`] bytes.
pub(crate) fn pack_cubes(files: Vec<Candidate>) -> Vec<Vec<Candidate>> {
    let mut cubes: Vec<Vec<Candidate>> = Vec::new();
    let mut size = 0u64;
    for file in files {
        match cubes.last_mut() {
            Some(cube) if size.saturating_add(file.size) <= TARGET_CUBE_SIZE => {
                size = size.saturating_add(file.size);
                cube.push(file);
            }
            _ => {
                size = file.size;
                cubes.push(vec![file]);
            }
        }
    }
    cubes
}

fn cube_id(file: &Candidate) -> Option<&str> {
    file.cube.as_ref().map(|cube| cube.id.as_str())
}

/// `files` (sorted by cube) without the files of cubes of [`MIN_CUBE_SIZE`] or more.
fn without_full_cubes(files: Vec<Candidate>) -> Vec<Candidate> {
    let mut sizes: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for file in &files {
        if let Some(id) = cube_id(file) {
            *sizes.entry(id.to_string()).or_insert(0) += file.size;
        }
    }
    files
        .into_iter()
        .filter(|file| {
            cube_id(file).is_none_or(|id| sizes.get(id).is_none_or(|size| *size < MIN_CUBE_SIZE))
        })
        .collect()
}

/// True when `files` are all of one cube (none unclustered).
fn is_one_cube(files: &[Candidate]) -> bool {
    match files.first().and_then(cube_id) {
        Some(first) => files.iter().all(|file| cube_id(file) == Some(first)),
        None => false,
    }
}
