//! A checkpoint planned, not written ([`super::CheckpointOptions::dry_run`]).
//!
//! The plan follows the write step by step: the same kind, the same names (classic and
//! multi-part names are deterministic; a V2 manifest and its sidecars are named with UUIDs
//! drawn for the plan), as many sidecars as the write splits the file actions into, and the
//! action counts the write reports. The sizes are unknown before writing and reported as 0.

use crate::error::Result;
use crate::log::path::{
    classic_checkpoint_file_name, multi_part_checkpoint_file_name, uuid_checkpoint_file_name,
};
use crate::storage::Storage;

use super::{new_sidecar_path, num_parts, CheckpointOptions, CheckpointResult, Content, WriteKind};

/// What writing `content` as a checkpoint of `kind` with `options` would produce.
pub(super) fn describe(
    storage: &Storage,
    content: &Content,
    kind: WriteKind,
    options: &CheckpointOptions,
) -> Result<CheckpointResult> {
    let version = content.version;
    let log_url = |name: &str| storage.url_of(&storage.log_file(name));
    let mut planned = CheckpointResult {
        version,
        kind: kind.name(),
        files: Vec::new(),
        sidecars: Vec::new(),
        num_actions: content.num_actions(),
        num_add_files: content.num_adds(),
        size_in_bytes: 0,
        dry_run: true,
        incremental_from: None,
    };
    match kind {
        WriteKind::Classic => planned
            .files
            .push(log_url(&classic_checkpoint_file_name(version))),
        WriteKind::MultiPart { part_size } => {
            let parts = num_parts(content, part_size)?;
            planned.files = (1..=parts)
                .map(|part| log_url(&multi_part_checkpoint_file_name(version, part, parts)))
                .collect();
        }
        WriteKind::V2 => describe_v2(storage, content, options, &mut planned),
    }
    Ok(planned)
}

/// Fills `planned` with the V2 checkpoint's manifest, sidecars and actions: the non-file
/// actions, `checkpointMetadata`, one `sidecar` action per sidecar and the file actions
/// (in the sidecars or the manifest).
fn describe_v2(
    storage: &Storage,
    content: &Content,
    options: &CheckpointOptions,
    planned: &mut CheckpointResult,
) {
    if options.uses_sidecars() {
        let sidecars = content
            .num_file_actions()
            .div_ceil(options.actions_per_sidecar());
        planned.sidecars = (0..sidecars)
            .map(|_| storage.url_of(&new_sidecar_path(storage).1))
            .collect();
    }
    planned.num_actions += 1 + planned.sidecars.len() as u64;
    let uuid = uuid::Uuid::new_v4().to_string();
    let manifest = uuid_checkpoint_file_name(content.version, &uuid, options.manifest_format());
    planned
        .files
        .push(storage.url_of(&storage.log_file(&manifest)));
    if options.classic_compat {
        let copy = classic_checkpoint_file_name(content.version);
        planned.files.push(storage.url_of(&storage.log_file(&copy)));
    }
}
