//! Reading the files of a [`LogSegment`] and folding them into snapshot state
//! (spec "Action Reconciliation", "Checkpoints"; catalogue C, G).
//!
//! IO goes through [`Storage`], [`crate::storage::IoConfig::concurrent_reads`] objects at once:
//! commit files, checkpoint parts and sidecars are fetched together. Decoding and replay are CPU
//! work and run through [`crate::util::cpu::run`]: commits are decoded in parallel, checkpoint row
//! groups too (see [`crate::log::decode::checkpoint`]), and the fold into a state is one job.

use std::collections::HashMap;

use arrow_array::Array;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use rayon::prelude::*;

use crate::actions::layout::FileActionBatch;
use crate::actions::{CommitInfo, DomainMetadata, Metadata, Protocol, Sidecar, Txn};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::log::commit_range::CommitFile;
use crate::log::decode::checkpoint::{
    merge, read_parquet_actions_skipping, CheckpointProjection, RowGroupSkipping,
};
use crate::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::log::path::{CheckpointFormat, CheckpointKind, LogFileKind, LogPath, SIDECARS_DIR};
use crate::log::segment::{CheckpointFiles, LogSegment};
use crate::replay::file_list::{FileListOptions, MatchJudge};
use crate::replay::reconcile::{FileKeys, Replay, ReplayedFiles, TouchedKeys};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;
use crate::util::cpu;

/// The state of one version before it becomes a [`crate::Snapshot`].
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct TableState {
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
    pub files: ReplayedFiles,
    /// Newest `txn` per app id.
    pub txns: HashMap<String, Txn>,
    /// Newest `domainMetadata` per domain, tombstones included.
    pub domains: HashMap<String, DomainMetadata>,
    /// The `commitInfo` of the last commit, when its file was read.
    pub commit_info: Option<CommitInfo>,
    /// True when the `add` actions kept their `stats` strings.
    pub has_stats: bool,
}

/// Decoded commits, newest first, with their versions.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) type Deltas = Vec<(u64, DecodedActions)>;

/// Decodes commit files read from a [`crate::log::commit_range::CommitRange`] (ascending),
/// newest first. The files are decoded in parallel, through [`cpu::run`].
pub(crate) async fn decode_commits(files: Vec<CommitFile>, keep_stats: bool) -> Result<Deltas> {
    let log = files
        .first()
        .map(|file| file.name.clone())
        .unwrap_or_default();
    // Each file (and its bytes) is dropped once decoded.
    let decode = move || {
        files
            .into_par_iter()
            .rev()
            .map(|file| file.decode(keep_stats).map(|d| (file.version, d)))
            .collect()
    };
    cpu::run(decode, |reason| Error::corrupt(log, reason)).await
}

/// Reads and decodes the commits and compaction files of `segment`, newest first. The files
/// are decoded in parallel, through [`cpu::run`].
pub(crate) async fn read_deltas(
    storage: &Storage,
    files: &[&LogPath],
    keep_stats: bool,
) -> Result<Deltas> {
    let locations: Vec<Path> = files.iter().map(|f| f.location.clone()).collect();
    let contents = storage.read_all(locations).await?;
    let named: Vec<NamedLogFile> = files
        .iter()
        .map(|file| {
            let options = decode_options(
                file,
                DecodeOptions {
                    keep_stats,
                    ..DecodeOptions::default()
                },
            );
            (file.version, storage.url_of(&file.location), options)
        })
        .collect();
    let log = storage.url_of(storage.log_dir());
    // Each file's bytes are dropped once decoded, so that the raw log and its decoded form do
    // not both stay whole in memory.
    let decode = move || {
        named
            .into_par_iter()
            .zip(contents.into_par_iter())
            .rev()
            .map(|((version, name, options), bytes)| {
                decode_actions(&bytes, version, &name, options).map(|d| (version, d))
            })
            .collect()
    };
    cpu::run(decode, |reason| Error::corrupt(log, reason)).await
}

/// Reads every part of `checkpoint`, and its sidecars when it is a V2 checkpoint; with
/// `skipping`, the file actions of Parquet row groups that cannot match are left out (see
/// [`crate::log::decode::checkpoint::read_parquet_actions_skipping`]).
pub(crate) async fn read_checkpoint(
    storage: &Storage,
    checkpoint: &CheckpointFiles,
    with_stats: bool,
    skipping: Option<&RowGroupSkipping>,
) -> Result<DecodedActions> {
    let projection = CheckpointProjection {
        stats: with_stats,
        ..CheckpointProjection::default()
    };
    let version = checkpoint.version;
    let parts = futures::stream::iter(checkpoint.parts.clone())
        .map(|part| async move {
            read_checkpoint_part(storage, &part, version, projection, skipping).await
        })
        .buffered(storage.io().concurrent_reads.max(1))
        .try_collect::<Vec<_>>()
        .await?;
    let mut all = DecodedActions::default();
    for (part, decoded) in checkpoint.parts.iter().zip(parts) {
        merge(&mut all, decoded, part.location.as_ref())?;
    }
    let sidecars = std::mem::take(&mut all.sidecars);
    let sidecar_projection = CheckpointProjection {
        other_actions: false,
        stats: with_stats,
        ..CheckpointProjection::default()
    };
    let sidecar_files = futures::stream::iter(sidecars)
        .map(|sidecar| async move {
            let path = sidecar_path(storage, &sidecar.path)?;
            let size = u64::try_from(sidecar.size_in_bytes).unwrap_or_default();
            let size = match size {
                0 => storage.size(&path).await?,
                size => size,
            };
            let version = checkpoint.version;
            read_parquet_actions_skipping(
                storage,
                &path,
                size,
                version,
                sidecar_projection,
                skipping,
            )
            .await
        })
        .buffered(storage.io().concurrent_reads.max(1))
        .try_collect::<Vec<_>>()
        .await?;
    for sidecar in sidecar_files {
        all.file_actions.extend(sidecar.file_actions);
    }
    Ok(all)
}

/// [`fold_state`] as a job of [`cpu::run`], for async code.
pub(crate) async fn fold_state_async(
    table: &str,
    version: u64,
    deltas: Deltas,
    checkpoint: Option<DecodedActions>,
    base: Option<TableState>,
    keys: FileKeys,
) -> Result<TableState> {
    let name = table.to_string();
    let fold = move || fold_state(&name, version, deltas, checkpoint, base.as_ref(), &keys);
    cpu::run(fold, |reason| Error::invalid_table(table, reason)).await
}

/// Folds decoded deltas (newest first) and an optional checkpoint into the state of
/// `version`. `base` is an earlier state to build on instead of a checkpoint (refresh).
/// CPU work (replay, see [`Replay`]): async code calls [`fold_state_async`].
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn fold_state(
    table: &str,
    version: u64,
    deltas: Deltas,
    checkpoint: Option<DecodedActions>,
    base: Option<&TableState>,
    keys: &FileKeys,
) -> Result<TableState> {
    let mut fold = StateFold::new(version, keys.clone());
    for (delta_version, delta) in deltas {
        fold.absorb(delta_version, delta)?;
    }
    fold.finish(table, checkpoint, base)
}

/// The state of `version` being folded from its deltas, newest first, one at a time
/// ([`StateFold::absorb`]), then from a checkpoint or an earlier state
/// ([`StateFold::finish`]). For every kind of action the newest counts (spec "Action
/// Reconciliation"); file actions are replayed as they come, so a caller may decode deltas in
/// chunks and drop each once absorbed ([`load_segment`]). CPU work.
struct StateFold {
    version: u64,
    protocol: Option<Protocol>,
    metadata: Option<Metadata>,
    txns: HashMap<String, Txn>,
    domains: HashMap<String, DomainMetadata>,
    /// The `commitInfo` of commit `version`, once the newest delta has been absorbed.
    commit_info: Option<CommitInfo>,
    absorbed_any: bool,
    replay: Replay,
}

impl StateFold {
    fn new(version: u64, keys: FileKeys) -> Self {
        StateFold {
            version,
            protocol: None,
            metadata: None,
            txns: HashMap::new(),
            domains: HashMap::new(),
            commit_info: None,
            absorbed_any: false,
            replay: Replay::new(keys),
        }
    }

    /// Adds `delta`, the decoded commit (or compaction file) at `version`, older than every
    /// delta absorbed before it.
    fn absorb(&mut self, version: u64, delta: DecodedActions) -> Result<()> {
        if !self.absorbed_any && version == self.version {
            self.commit_info = delta.commit_info;
        }
        self.absorbed_any = true;
        self.take_older(delta.protocol, delta.metadata, delta.txns, delta.domains);
        for batch in delta.file_actions {
            self.replay.commit(batch)?;
        }
        Ok(())
    }

    /// Takes the non-file actions of a file older than every one taken before: each counts
    /// only where no newer action of its kind (and app id, or domain) was taken.
    fn take_older(
        &mut self,
        protocol: Option<Protocol>,
        metadata: Option<Metadata>,
        txns: Vec<Txn>,
        domains: Vec<DomainMetadata>,
    ) {
        take_newest(&mut self.protocol, protocol);
        take_newest(&mut self.metadata, metadata);
        for txn in txns {
            self.txns.entry(txn.app_id.clone()).or_insert(txn);
        }
        for domain in domains {
            self.domains.entry(domain.domain.clone()).or_insert(domain);
        }
    }

    /// The state, after the actions of `checkpoint` and then those of `base`, both older than
    /// every delta.
    fn finish(
        mut self,
        table: &str,
        checkpoint: Option<DecodedActions>,
        base: Option<&TableState>,
    ) -> Result<TableState> {
        let mut reconciled = Vec::new();
        if let Some(checkpoint) = checkpoint {
            let (txns, domains) = (checkpoint.txns, checkpoint.domains);
            self.take_older(checkpoint.protocol, checkpoint.metadata, txns, domains);
            reconciled = checkpoint.file_actions;
        }
        if let Some(base) = base {
            take_newest(&mut self.protocol, Some(base.protocol.clone()));
            take_newest(&mut self.metadata, Some(base.metadata.clone()));
            for (app, txn) in &base.txns {
                self.txns.entry(app.clone()).or_insert_with(|| txn.clone());
            }
            for (name, domain) in &base.domains {
                self.domains
                    .entry(name.clone())
                    .or_insert_with(|| domain.clone());
            }
            reconciled.extend(base_batches(base, self.version));
        }
        let version = self.version;
        let protocol = self.protocol.ok_or_else(|| {
            Error::invalid_table(table, format!("version {version} has no protocol action"))
        })?;
        let metadata = self.metadata.ok_or_else(|| {
            Error::invalid_table(table, format!("version {version} has no metaData action"))
        })?;
        let files = self.replay.finish(reconciled)?;
        Ok(TableState {
            version,
            protocol,
            metadata,
            files,
            txns: self.txns,
            domains: self.domains,
            commit_info: self.commit_info,
            has_stats: base.is_some_and(|base| base.has_stats),
        })
    }
}

/// The live files and tombstones of `base` as already reconciled batches.
fn base_batches(base: &TableState, version: u64) -> Vec<FileActionBatch> {
    let adds = base.files.adds.iter().map(|adds| FileActionBatch {
        version,
        from_checkpoint: true,
        file: "the previous snapshot".into(),
        removes: arrow_array::StructArray::new_null(
            crate::actions::layout::remove_fields(),
            adds.len(),
        ),
        adds: adds.clone(),
        may_match: None,
    });
    let removes = base.files.removes.iter().map(|removes| FileActionBatch {
        version,
        from_checkpoint: true,
        file: "the previous snapshot".into(),
        adds: arrow_array::StructArray::new_null(
            crate::actions::layout::add_fields(),
            removes.len(),
        ),
        removes: removes.clone(),
        may_match: None,
    });
    adds.chain(removes).collect()
}

fn take_newest<T>(slot: &mut Option<T>, candidate: Option<T>) {
    if slot.is_none() {
        *slot = candidate;
    }
}

/// Loads the state of `segment.end_version`; with `skipping`, without the checkpoint files
/// that it rules out (a state for a filtered listing only).
///
/// The checkpoint is read while the commits after it are folded in newest first, in chunks
/// (see [`fold_deltas_in_chunks`]), so that memory holds at most a few chunks of the log at a
/// time besides the state itself.
pub(crate) async fn load_segment(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
    with_stats: bool,
    skipping: Option<&RowGroupSkipping>,
) -> Result<TableState> {
    let keys = FileKeys::new(storage.root_url());
    let fold = StateFold::new(segment.end_version, keys);
    let with_stats_options = DecodeOptions {
        keep_stats: with_stats,
        ..DecodeOptions::default()
    };
    let (fold, checkpoint) = futures::try_join!(
        fold_deltas_in_chunks(storage, segment, with_stats_options, fold),
        async {
            match &segment.checkpoint {
                Some(checkpoint) => read_checkpoint(storage, checkpoint, with_stats, skipping)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        }
    )?;
    let name = table.to_string();
    let finish = move || fold.finish(&name, checkpoint, None);
    let mut state = cpu::run(finish, |reason| Error::invalid_table(table, reason))
        .await
        .map_err(|error| naming_checkpoint(error, segment))?;
    state.has_stats = with_stats;
    Ok(state)
}

/// What an incremental checkpoint of `segment.end_version` needs besides the previous
/// checkpoint's file-action rows (`maintenance/checkpoint/incremental.rs`).
pub(crate) struct CheckpointDelta {
    /// The version's protocol, metadata, transactions and domains (from the commits after
    /// the checkpoint and the checkpoint's own non-file rows); its `files` are only those of
    /// the commits, with their statistics, reconciled among themselves.
    pub state: TableState,
    /// The keys of every file action of those commits: the checkpoint rows they supersede.
    pub touched: TouchedKeys,
    /// The sidecars the checkpoint names (a V2 checkpoint).
    pub sidecars: Vec<Sidecar>,
    /// True when a JSON V2 checkpoint holds file actions itself (not in Parquet).
    pub json_file_actions: bool,
}

/// Reads what [`CheckpointDelta`] holds: the commits (and compaction files) after
/// `segment`'s checkpoint in chunks, as [`load_segment`] reads them, and the checkpoint's
/// non-file actions only (a Parquet part's row groups without them are not read).
pub(crate) async fn load_checkpoint_delta(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
) -> Result<CheckpointDelta> {
    let keys = FileKeys::new(storage.root_url());
    let fold = StateFold::new(segment.end_version, keys);
    let options = DecodeOptions {
        keep_stats: true,
        ..DecodeOptions::default()
    };
    let (mut fold, checkpoint) = futures::try_join!(
        fold_deltas_in_chunks(storage, segment, options, fold),
        async {
            match &segment.checkpoint {
                Some(checkpoint) => read_checkpoint_head(storage, checkpoint).await.map(Some),
                None => Ok(None),
            }
        }
    )?;
    let (mut sidecars, mut json_file_actions) = (Vec::new(), false);
    if let Some(checkpoint) = checkpoint {
        json_file_actions = !checkpoint.file_actions.is_empty();
        sidecars = checkpoint.sidecars;
        let (txns, domains) = (checkpoint.txns, checkpoint.domains);
        fold.take_older(checkpoint.protocol, checkpoint.metadata, txns, domains);
    }
    let name = table.to_string();
    let finish = move || {
        let version = fold.version;
        let missing = |what: &str| {
            Error::invalid_table(&name, format!("version {version} has no {what} action"))
        };
        let protocol = fold.protocol.ok_or_else(|| missing("protocol"))?;
        let metadata = fold.metadata.ok_or_else(|| missing("metaData"))?;
        let (files, touched) = fold.replay.finish_commits()?;
        let state = TableState {
            version,
            protocol,
            metadata,
            files,
            txns: fold.txns,
            domains: fold.domains,
            commit_info: fold.commit_info,
            has_stats: true,
        };
        Ok((state, touched))
    };
    let (state, touched) = cpu::run(finish, |reason| Error::invalid_table(table, reason))
        .await
        .map_err(|error| naming_checkpoint(error, segment))?;
    Ok(CheckpointDelta {
        state,
        touched,
        sidecars,
        json_file_actions,
    })
}

/// The non-file actions of every part of `checkpoint` and the sidecars it names; the file
/// actions only of a JSON V2 checkpoint (whose lines cannot be told apart unread).
async fn read_checkpoint_head(
    storage: &Storage,
    checkpoint: &CheckpointFiles,
) -> Result<DecodedActions> {
    let projection = CheckpointProjection {
        file_actions: false,
        ..CheckpointProjection::default()
    };
    let version = checkpoint.version;
    let mut head = DecodedActions::default();
    for part in &checkpoint.parts {
        let decoded = match &part.kind {
            LogFileKind::Checkpoint(CheckpointKind::Uuid {
                format: CheckpointFormat::Json,
                ..
            }) => {
                let all = CheckpointProjection::default();
                read_checkpoint_part(storage, part, version, all, None).await?
            }
            _ => read_checkpoint_part(storage, part, version, projection, None).await?,
        };
        merge(&mut head, decoded, part.location.as_ref())?;
    }
    Ok(head)
}

/// A chunk of commit files read at once by [`fold_deltas_in_chunks`] ends once it holds this
/// many bytes or [`DELTA_CHUNK_FILES`] files.
const DELTA_CHUNK_BYTES: u64 = 16 << 20;

/// See [`DELTA_CHUNK_BYTES`].
const DELTA_CHUNK_FILES: usize = 256;

/// Folds the commits (and compaction files) of `segment`, decoded with `options`, into
/// `fold`, newest first: chunks of files are read (the next chunk while the current one is
/// decoded), decoded in parallel and absorbed, one [`cpu::run`] job per chunk, and dropped.
async fn fold_deltas_in_chunks(
    storage: &Storage,
    segment: &LogSegment,
    options: DecodeOptions,
    mut fold: StateFold,
) -> Result<StateFold> {
    let mut newest_first = segment.deltas_ascending();
    newest_first.reverse();
    let chunks: Vec<(Vec<Path>, Vec<NamedLogFile>)> = chunks_of_log_files(&newest_first)
        .into_iter()
        .map(|chunk| {
            let locations = chunk.iter().map(|file| file.location.clone()).collect();
            let named = chunk
                .iter()
                .map(|file| {
                    let options = decode_options(file, options);
                    (file.version, storage.url_of(&file.location), options)
                })
                .collect();
            (locations, named)
        })
        .collect();
    let log = storage.url_of(storage.log_dir());
    let mut reads = futures::stream::iter(chunks)
        .map(|(locations, named)| async move {
            let contents = storage.read_all(locations).await?;
            Ok::<_, Error>((named, contents))
        })
        .buffered(2);
    while let Some((named, contents)) = reads.try_next().await? {
        let decode_and_absorb = move || {
            let decoded = named
                .into_par_iter()
                .zip(contents.into_par_iter())
                .map(|((version, name, options), bytes)| {
                    decode_actions(&bytes, version, &name, options).map(|d| (version, d))
                })
                .collect::<Result<Vec<_>>>()?;
            for (version, delta) in decoded {
                fold.absorb(version, delta)?;
            }
            Ok(fold)
        };
        fold = cpu::run(decode_and_absorb, |reason| Error::corrupt(&log, reason)).await?;
    }
    Ok(fold)
}

/// `files` cut, in order, into chunks of at most [`DELTA_CHUNK_FILES`] files that end once
/// they reach [`DELTA_CHUNK_BYTES`].
fn chunks_of_log_files<'a>(files: &[&'a LogPath]) -> Vec<Vec<&'a LogPath>> {
    let mut chunks = Vec::new();
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for &file in files {
        chunk.push(file);
        bytes += file.size;
        if bytes >= DELTA_CHUNK_BYTES || chunk.len() >= DELTA_CHUNK_FILES {
            chunks.push(std::mem::take(&mut chunk));
            bytes = 0;
        }
    }
    if !chunk.is_empty() {
        chunks.push(chunk);
    }
    chunks
}

/// A log file to decode: its version, its URL (for errors) and how to decode it.
type NamedLogFile = (u64, String, DecodeOptions);

/// How to decode the log file `file`: as `options` say, knowing that compaction files hold
/// reconciled actions.
fn decode_options(file: &LogPath, options: DecodeOptions) -> DecodeOptions {
    DecodeOptions {
        from_checkpoint: matches!(file.kind, LogFileKind::Compaction { .. }),
        ..options
    }
}

/// Loads the state of `segment.end_version` without its files: protocol, metadata, `txn`
/// versions, domains and the last `commitInfo`, what a blind append needs. The `add` and
/// `remove` lines of the commits after the checkpoint are checked to be JSON, not decoded;
/// those of the checkpoint (its `add`/`remove` columns and its sidecars) are not read.
pub(crate) async fn load_segment_without_files(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
) -> Result<TableState> {
    let options = DecodeOptions {
        skip_file_actions: true,
        ..DecodeOptions::default()
    };
    let fold = StateFold::new(segment.end_version, FileKeys::new(storage.root_url()));
    let fold = fold_deltas_in_chunks(storage, segment, options, fold).await?;
    let checkpoint = match &segment.checkpoint {
        Some(checkpoint) => {
            let projection = CheckpointProjection {
                file_actions: false,
                ..CheckpointProjection::default()
            };
            let mut all = DecodedActions::default();
            for part in &checkpoint.parts {
                let decoded =
                    read_checkpoint_part(storage, part, checkpoint.version, projection, None)
                        .await?;
                merge(&mut all, decoded, part.location.as_ref())?;
            }
            all.sidecars.clear();
            all.file_actions.clear();
            Some(all)
        }
        None => None,
    };
    fold.finish(table, checkpoint, None)
        .map_err(|error| naming_checkpoint(error, segment))
}

/// `error`, met folding the state of `segment`, with the segment's checkpoint named in its
/// reason when it is an [`Error::InvalidTable`] (the state came from that file).
fn naming_checkpoint(error: Error, segment: &LogSegment) -> Error {
    let part = segment
        .checkpoint
        .as_ref()
        .and_then(|checkpoint| checkpoint.parts.first());
    match (error, part) {
        (Error::InvalidTable { table, reason }, Some(part)) => Error::InvalidTable {
            table,
            reason: format!(
                "{reason} (read from the checkpoint {} and the commits after it)",
                part.location
            ),
        },
        (error, _) => error,
    }
}

/// Loads the state of `segment.end_version` holding the live files that may hold rows
/// matching `filter`: checkpoint row groups that cannot match (by their `stats_parsed`
/// bounds) are not read, and every decoded batch (commits and checkpoint alike) has its adds
/// judged by their statistics and partition values ([`MatchJudge`]) in parallel, before
/// replay; adds that cannot match count in reconciliation but never become live. The state
/// is for a filtered listing only. Statistics are kept.
pub(crate) async fn load_segment_matching(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
    filter: &Expr,
) -> Result<TableState> {
    let mut deltas = read_deltas(storage, &segment.deltas_ascending(), true).await?;
    let mut checkpoint = match &segment.checkpoint {
        Some(checkpoint) => {
            let metadata = match deltas.iter().find_map(|(_, delta)| delta.metadata.clone()) {
                Some(metadata) => metadata,
                None => checkpoint_metadata(storage, table, checkpoint).await?,
            };
            let skipping = RowGroupSkipping::new(filter.clone(), &metadata, table)?;
            Some(read_checkpoint(storage, checkpoint, true, Some(&skipping)).await?)
        }
        None => None,
    };
    let newest = |pick: fn(&DecodedActions) -> bool| {
        deltas
            .iter()
            .map(|(_, delta)| delta)
            .chain(checkpoint.as_ref())
            .find(|delta| pick(delta))
    };
    let protocol = newest(|d| d.protocol.is_some()).and_then(|d| d.protocol.clone());
    let metadata = newest(|d| d.metadata.is_some()).and_then(|d| d.metadata.clone());
    if let (Some(protocol), Some(metadata)) = (protocol, metadata) {
        let config = TableConfiguration::try_new(protocol, metadata, table)?;
        let filter = filter.clone();
        let judge = move || {
            let options = FileListOptions::default();
            let judge = MatchJudge::new(&config, &options, &filter)?;
            let batches = deltas
                .iter_mut()
                .flat_map(|(_, delta)| delta.file_actions.iter_mut())
                .chain(
                    checkpoint
                        .iter_mut()
                        .flat_map(|c| c.file_actions.iter_mut()),
                );
            batches
                .collect::<Vec<_>>()
                .into_par_iter()
                .try_for_each(|batch| {
                    batch.may_match = Some(judge.may_match(&batch.adds)?);
                    Ok::<_, Error>(())
                })?;
            Ok((deltas, checkpoint))
        };
        (deltas, checkpoint) =
            cpu::run(judge, |reason| Error::invalid_table(table, reason)).await?;
    }
    let keys = FileKeys::new(storage.root_url());
    let version = segment.end_version;
    let mut state = fold_state_async(table, version, deltas, checkpoint, None, keys)
        .await
        .map_err(|error| naming_checkpoint(error, segment))?;
    state.has_stats = true;
    Ok(state)
}

/// The `metaData` action of a checkpoint, reading none of its file actions.
async fn checkpoint_metadata(
    storage: &Storage,
    table: &str,
    checkpoint: &CheckpointFiles,
) -> Result<Metadata> {
    let projection = CheckpointProjection {
        file_actions: false,
        ..CheckpointProjection::default()
    };
    let version = checkpoint.version;
    for part in &checkpoint.parts {
        let decoded = read_checkpoint_part(storage, part, version, projection, None).await?;
        if let Some(metadata) = decoded.metadata {
            return Ok(metadata);
        }
    }
    Err(Error::invalid_table(
        table,
        format!("the checkpoint of version {version} has no metaData action"),
    ))
}

async fn read_checkpoint_part(
    storage: &Storage,
    part: &LogPath,
    version: u64,
    projection: CheckpointProjection,
    skipping: Option<&RowGroupSkipping>,
) -> Result<DecodedActions> {
    match &part.kind {
        LogFileKind::Checkpoint(CheckpointKind::Uuid {
            format: CheckpointFormat::Json,
            ..
        }) => {
            let bytes = storage.read(&part.location).await?;
            let name = storage.url_of(&part.location);
            let options = DecodeOptions {
                from_checkpoint: true,
                keep_stats: projection.stats,
                skip_file_actions: !projection.file_actions,
            };
            let file = name.clone();
            let decode = move || decode_actions(&bytes, version, &name, options);
            cpu::run(decode, |reason| Error::corrupt(file, reason)).await
        }
        _ => {
            let (location, size) = (&part.location, part.size);
            read_parquet_actions_skipping(storage, location, size, version, projection, skipping)
                .await
        }
    }
}

/// Where a sidecar named in a V2 checkpoint lives: a file name (or relative path) inside
/// `_delta_log/_sidecars/`, or an absolute URI in the table's store.
pub(crate) fn sidecar_path(storage: &Storage, path: &str) -> Result<Path> {
    if path.contains(':') {
        return storage.resolve(path);
    }
    let relative = format!("_delta_log/{SIDECARS_DIR}/{path}");
    storage.resolve(&relative)
}
