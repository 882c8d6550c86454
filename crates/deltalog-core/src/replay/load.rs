//! Reading the files of a [`LogSegment`] and folding them into snapshot state
//! (spec "Action Reconciliation", "Checkpoints"; catalogue C, G).
//!
//! IO goes through [`Storage`], [`crate::storage::IoConfig::concurrent_reads`] objects at once:
//! commit files, checkpoint parts and sidecars are fetched together. Decoding and replay are CPU
//! work and run through [`crate::util::cpu::run`]: commits are decoded in parallel, checkpoint row
//! groups too (see [`crate::log::decode::checkpoint`]), and the fold into a state is one job.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, BooleanArray, StringArray, StructArray};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use rayon::prelude::*;

use crate::actions::layout::{add, FileActionBatch};
use crate::actions::{CommitInfo, DomainMetadata, Metadata, Protocol, Sidecar, Txn};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::log::checksum::read_checksum;
use crate::log::commit_range::CommitFile;
use crate::log::decode::add_scanner::StatsText;
use crate::log::decode::checkpoint::{
    merge, read_parquet_actions_skipping, CheckpointProjection, RowGroupSkipping,
};
use crate::log::decode::commit::{decode_actions, DecodeOptions, DecodedActions};
use crate::log::path::{CheckpointFormat, CheckpointKind, LogFileKind, LogPath, SIDECARS_DIR};
use crate::log::segment::{CheckpointFiles, LogSegment};
use crate::replay::file_list::{FileListOptions, MatchJudge};
use crate::replay::reconcile::{FileKeys, Replay, ReplayedFiles, TouchedKeys};
use crate::storage::Storage;
use crate::table_config::stats::decode_string_bodies;
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
        stats_escaped: false,
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
        stats_escaped: false,
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
        stats: StatsText::kept(with_stats),
        ..DecodeOptions::default()
    };
    let (fold, checkpoint) = futures::try_join!(
        fold_deltas_in_chunks(storage, segment, with_stats_options, fold, None),
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
        stats: StatsText::Decoded,
        ..DecodeOptions::default()
    };
    let (mut fold, checkpoint) = futures::try_join!(
        fold_deltas_in_chunks(storage, segment, options, fold, None),
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

/// [`DELTA_CHUNK_BYTES`] for a filtered load ([`load_segment_matching`]): its state keeps only
/// the rows that may match, so the chunks in flight (read, decoded with their statistics) are
/// most of what it holds; smaller ones keep it well below the full load's.
const JUDGED_CHUNK_BYTES: u64 = 4 << 20;

/// The bytes of the newest commits [`newest_protocol_and_metadata`] keeps, once read, for the
/// fold of a filtered load to decode without reading them again: whole chunks, up to this many
/// bytes.
const HEAD_SCAN_KEPT_BYTES: u64 = DELTA_CHUNK_BYTES;

/// Folds the commits (and compaction files) of `segment`, decoded with `options`, into
/// `fold`, newest first: chunks of files are read (the next chunk while the current one is
/// decoded), decoded in parallel and absorbed, one [`cpu::run`] job per chunk, and dropped.
/// With `judged` (a filtered load), chunks are smaller ([`JUDGED_CHUNK_BYTES`]), the first ones
/// may come already read, and each file's batches are judged as soon as the file is decoded,
/// in the same parallel task, so that only the rows that may match outlive the chunk.
async fn fold_deltas_in_chunks(
    storage: &Storage,
    segment: &LogSegment,
    options: DecodeOptions,
    mut fold: StateFold,
    judged: Option<JudgedFold>,
) -> Result<StateFold> {
    let mut newest_first = segment.deltas_ascending();
    newest_first.reverse();
    let (judging, read_already) = match judged {
        Some(judged) => (Some(judged.judging), judged.read_already),
        None => (None, Vec::new()),
    };
    let chunk_bytes = match judging {
        Some(_) => JUDGED_CHUNK_BYTES,
        None => DELTA_CHUNK_BYTES,
    };
    let chunks: Vec<(Vec<Path>, Vec<NamedLogFile>)> =
        chunks_of_log_files(&newest_first, chunk_bytes)
            .into_iter()
            .map(|chunk| {
                let locations = chunk.iter().map(|file| file.location.clone()).collect();
                let named = chunk
                    .iter()
                    .map(|file| {
                        let options = DecodeOptions {
                            // Only the newest commit's provenance is kept (`StateFold::absorb`).
                            skip_commit_info: file.version != segment.end_version,
                            ..decode_options(file, options)
                        };
                        (file.version, storage.url_of(&file.location), options)
                    })
                    .collect();
                (locations, named)
            })
            .collect();
    let log = storage.url_of(storage.log_dir());
    let mut read_already = read_already.into_iter();
    let mut reads = futures::stream::iter(chunks)
        .map(move |(locations, named): (Vec<Path>, _)| {
            let given = read_already.next();
            let given = given.filter(|contents| contents.len() == locations.len());
            async move {
                let contents = match given {
                    Some(contents) => contents,
                    None => storage.read_all(locations).await?,
                };
                Ok::<_, Error>((named, contents))
            }
        })
        .buffered(2);
    while let Some((named, contents)) = reads.try_next().await? {
        let judging = judging.clone();
        let decode_and_absorb = move || {
            let list_options = FileListOptions::default();
            let judge = judging
                .as_deref()
                .map(|judging| judging.judge(&list_options))
                .transpose()?;
            let decoded = named
                .into_par_iter()
                .zip(contents.into_par_iter())
                .map(|((version, name, options), bytes)| {
                    let mut delta = decode_actions(&bytes, version, &name, options)?;
                    if let Some(judge) = &judge {
                        judge_batches(judge, &mut delta.file_actions)?;
                    }
                    Ok((version, delta))
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
/// they reach `max_bytes` and hold a file for each thread that decodes them (a chunk's files
/// are decoded in parallel, one file per thread: a chunk of one large commit would leave
/// every other core idle).
fn chunks_of_log_files<'a>(files: &[&'a LogPath], max_bytes: u64) -> Vec<Vec<&'a LogPath>> {
    let threads = rayon::current_num_threads().clamp(1, DELTA_CHUNK_FILES);
    let mut chunks = Vec::new();
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for &file in files {
        chunk.push(file);
        bytes += file.size;
        let full = bytes >= max_bytes && chunk.len() >= threads;
        if full || chunk.len() >= DELTA_CHUNK_FILES {
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
    let fold = fold_deltas_in_chunks(storage, segment, options, fold, None).await?;
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
/// matching `filter`, as [`load_segment`] loads the full state: checkpoint row groups that
/// cannot match (by their `stats_parsed` bounds) are not read, and the commits are folded in
/// newest first in chunks, each file's batches having their adds judged by their statistics
/// and partition values ([`MatchJudge`]) as soon as the file is decoded; adds that cannot
/// match count in reconciliation but never become live, so only the rows that may match keep
/// their statistics in the state. The checkpoint's batches are judged alike once read. The
/// state is for a filtered listing only. Statistics are kept.
///
/// The judge needs the version's protocol and metadata before the first commit is decoded:
/// they come from the version's `.crc` file when it parses, else from the newest commits
/// that hold them (or the checkpoint), looked up without decoding any file action (see
/// [`newest_protocol_and_metadata`]). Should the state folded disagree with them (a `.crc`
/// file contradicting the log), the segment is loaded again with the state's own.
pub(crate) async fn load_segment_matching(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
    filter: &Expr,
) -> Result<TableState> {
    let LogHead {
        protocol,
        metadata,
        read_already,
    } = newest_protocol_and_metadata(storage, segment).await?;
    let head = protocol.zip(metadata);
    let state =
        load_segment_judged(storage, table, segment, filter, head.as_ref(), read_already).await?;
    let agrees = |(protocol, metadata): &(Protocol, Metadata)| {
        *protocol == state.protocol && *metadata == state.metadata
    };
    if head.as_ref().is_some_and(agrees) {
        return Ok(state);
    }
    let head = (state.protocol, state.metadata);
    load_segment_judged(storage, table, segment, filter, Some(&head), Vec::new()).await
}

/// [`load_segment_matching`] judging by the table configuration of `head` (protocol and
/// metadata); without it, nothing is judged (the fold then fails for want of a protocol or
/// metadata, or its caller loads again with those it found). `read_already`: the bytes of the
/// first chunks of commits (see [`LogHead`]).
async fn load_segment_judged(
    storage: &Storage,
    table: &str,
    segment: &LogSegment,
    filter: &Expr,
    head: Option<&(Protocol, Metadata)>,
    read_already: Vec<Vec<Bytes>>,
) -> Result<TableState> {
    let (judging, skipping) = match head {
        Some((protocol, metadata)) => {
            let config = TableConfiguration::try_new(protocol.clone(), metadata.clone(), table)?;
            let judging = Judging {
                config,
                filter: filter.clone(),
            };
            // The judge is made once here so that a filter it refuses fails before any read.
            judging.judge(&FileListOptions::default())?;
            let skipping = match &segment.checkpoint {
                Some(_) => Some(RowGroupSkipping::new(filter.clone(), metadata, table)?),
                None => None,
            };
            (Some(Arc::new(judging)), skipping)
        }
        None => (None, None),
    };
    let fold = StateFold::new(segment.end_version, FileKeys::new(storage.root_url()));
    let options = DecodeOptions {
        // Kept escaped for the judge, which decodes only those of the files that may match.
        stats: match judging {
            Some(_) => StatsText::Escaped,
            None => StatsText::Decoded,
        },
        ..DecodeOptions::default()
    };
    let judged = judging.clone().map(|judging| JudgedFold {
        judging,
        read_already,
    });
    let (fold, checkpoint) = futures::try_join!(
        fold_deltas_in_chunks(storage, segment, options, fold, judged),
        async {
            let Some(checkpoint) = &segment.checkpoint else {
                return Ok(None);
            };
            let decoded = read_checkpoint(storage, checkpoint, true, skipping.as_ref()).await?;
            let Some(judging) = judging.clone() else {
                return Ok(Some(decoded));
            };
            let judge = move || {
                let mut decoded = decoded;
                let options = FileListOptions::default();
                judge_batches(&judging.judge(&options)?, &mut decoded.file_actions)?;
                Ok(decoded)
            };
            cpu::run(judge, |reason| Error::invalid_table(table, reason))
                .await
                .map(Some)
        }
    )?;
    let name = table.to_string();
    let finish = move || fold.finish(&name, checkpoint, None);
    let mut state = cpu::run(finish, |reason| Error::invalid_table(table, reason))
        .await
        .map_err(|error| naming_checkpoint(error, segment))?;
    state.has_stats = true;
    Ok(state)
}

/// How [`fold_deltas_in_chunks`] folds the commits of a filtered load.
struct JudgedFold {
    judging: Arc<Judging>,
    /// The bytes of its first chunks, when [`newest_protocol_and_metadata`] read them.
    read_already: Vec<Vec<Bytes>>,
}

/// What a filtered load judges file actions with: the table's configuration and the filter.
struct Judging {
    config: TableConfiguration,
    filter: Expr,
}

impl Judging {
    fn judge<'a>(&'a self, options: &'a FileListOptions) -> Result<MatchJudge<'a>> {
        MatchJudge::new(&self.config, options, &self.filter)
    }
}

/// Sets `may_match` on each of `batches` (in parallel), judging the rows that hold an add. The
/// `stats` strings of a batch that holds them escaped
/// ([`FileActionBatch::stats_escaped`]) are judged as they are, then decoded for the rows that
/// may match and dropped for the others (those never become live files).
fn judge_batches(judge: &MatchJudge<'_>, batches: &mut [FileActionBatch]) -> Result<()> {
    batches.par_iter_mut().try_for_each(|batch| {
        if batch.adds.null_count() < batch.adds.len() {
            let may_match = judge.may_match(&batch.adds, batch.stats_escaped)?;
            if batch.stats_escaped {
                batch.adds = with_stats_decoded(&batch.adds, &may_match)?;
            }
            batch.may_match = Some(may_match);
        }
        batch.stats_escaped = false;
        Ok(())
    })
}

/// `adds` with their escaped `stats` strings decoded where `keep` is true, null elsewhere.
fn with_stats_decoded(adds: &StructArray, keep: &BooleanArray) -> Result<StructArray> {
    let (fields, mut columns, nulls) = adds.clone().into_parts();
    if let Some(at) = fields.iter().position(|field| field.name() == add::STATS) {
        let bodies = columns[at]
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| {
                Error::internal_invariant("the stats of decoded add actions are not strings")
            })?;
        columns[at] = Arc::new(decode_string_bodies(bodies, Some(keep))?);
    }
    StructArray::try_new(fields, columns, nulls)
        .map_err(|error| Error::arrow("add actions with their statistics decoded", error))
}

/// The protocol and metadata of `segment.end_version`, for judging files before the log is
/// replayed: those of its `.crc` file when the segment lists one that parses (an unreadable
/// one is ignored, as Delta on Spark ignores it); else the newest of the commits (and
/// compaction files), read newest first in chunks until both are found, and of the checkpoint
/// (its non-file actions only). A commit's file actions are never decoded here: only a file
/// whose text names a `protocol` or `metaData` key is decoded, without them. The commits are
/// cut into chunks as a filtered load's fold cuts them, and the newest chunks read are kept
/// (up to [`HEAD_SCAN_KEPT_BYTES`]) for it.
async fn newest_protocol_and_metadata(storage: &Storage, segment: &LogSegment) -> Result<LogHead> {
    if segment.checksum.is_some() {
        match read_checksum(storage, segment.end_version).await {
            Ok(Some(checksum)) => {
                return Ok(LogHead {
                    protocol: Some(checksum.protocol),
                    metadata: Some(checksum.metadata),
                    read_already: Vec::new(),
                })
            }
            Ok(None) | Err(Error::CorruptLogFile { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    let (mut protocol, mut metadata) = (None, None);
    let (mut read_already, mut kept_bytes, mut keeping) = (Vec::new(), 0, true);
    let mut newest_first = segment.deltas_ascending();
    newest_first.reverse();
    let chunks: Vec<Vec<(u64, Path, String)>> =
        chunks_of_log_files(&newest_first, JUDGED_CHUNK_BYTES)
            .into_iter()
            .map(|chunk| {
                let named = |file: &&LogPath| {
                    let location = file.location.clone();
                    (file.version, location, storage.url_of(&file.location))
                };
                chunk.iter().map(named).collect()
            })
            .collect();
    let log = storage.url_of(storage.log_dir());
    let mut reads = futures::stream::iter(chunks)
        .map(|named| async move {
            let locations = named.iter().map(|(_, path, _)| path.clone()).collect();
            let contents = storage.read_all(locations).await?;
            Ok::<_, Error>((named, contents))
        })
        .buffered(2);
    while protocol.is_none() || metadata.is_none() {
        let Some((named, contents)) = reads.try_next().await? else {
            break;
        };
        let bytes: u64 = contents.iter().map(|file| file.len() as u64).sum();
        keeping = keeping && kept_bytes + bytes <= HEAD_SCAN_KEPT_BYTES;
        if keeping {
            kept_bytes += bytes;
            read_already.push(contents.clone());
        }
        let scan = move || {
            named
                .into_par_iter()
                .zip(contents.into_par_iter())
                .map(|((version, _, name), bytes)| head_actions(&bytes, version, &name))
                .collect::<Result<Vec<_>>>()
        };
        let found = cpu::run(scan, |reason| Error::corrupt(&log, reason)).await?;
        for (newer_protocol, newer_metadata) in found {
            take_newest(&mut protocol, newer_protocol);
            take_newest(&mut metadata, newer_metadata);
        }
    }
    drop(reads);
    if let (Some(checkpoint), true) = (
        &segment.checkpoint,
        protocol.is_none() || metadata.is_none(),
    ) {
        let head = read_checkpoint_head(storage, checkpoint)
            .await
            .map_err(|error| naming_checkpoint(error, segment))?;
        take_newest(&mut protocol, head.protocol);
        take_newest(&mut metadata, head.metadata);
    }
    Ok(LogHead {
        protocol,
        metadata,
        read_already,
    })
}

/// What [`newest_protocol_and_metadata`] found.
struct LogHead {
    protocol: Option<Protocol>,
    metadata: Option<Metadata>,
    /// The contents of the first chunks of commits (newest first, cut as a filtered load's
    /// fold cuts them) that it read and kept.
    read_already: Vec<Vec<Bytes>>,
}

/// The `protocol` and `metaData` actions of the log file holding `bytes`: decoded (without
/// its file actions) only when its text holds a `"protocol"` or `"metaData"` key, which every
/// line of such an action starts with.
fn head_actions(
    bytes: &[u8],
    version: u64,
    file: &str,
) -> Result<(Option<Protocol>, Option<Metadata>)> {
    let names = |key: &str| memchr::memmem::find(bytes, key.as_bytes()).is_some();
    if !names("\"protocol\"") && !names("\"metaData\"") {
        return Ok((None, None));
    }
    let options = DecodeOptions {
        skip_file_actions: true,
        ..DecodeOptions::default()
    };
    let decoded = decode_actions(bytes, version, file, options)?;
    Ok((decoded.protocol, decoded.metadata))
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
                stats: StatsText::kept(projection.stats),
                skip_file_actions: !projection.file_actions,
                skip_commit_info: false,
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

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use serde_json::{json, Value};

    use crate::expr::parse_sql;
    use crate::scan::{Scan, ScanOptions};
    use crate::snapshot::SnapshotAt;
    use crate::table::Table;
    use crate::util::test_tables::table;

    /// More commits than one chunk of [`super::fold_deltas_in_chunks`] holds.
    const COMMITS: u64 = 300;

    /// The version whose `metaData` adds the column `c`.
    const NEW_COLUMN_AT: u64 = 150;

    const FILTERS: &[&str] = &[
        "id < 100",
        "id >= 2000 AND id < 2050",
        "c < 170",
        "c IS NULL",
        "part = 'p1' AND id < 500",
        "part = 'p1'",
        "part <> 'p0' OR c < 170",
        "id IS NULL",
        "NOT (id > 40)",
        "id = 12345678",
    ];

    fn metadata(with_c: bool, configuration: Value) -> Value {
        let mut fields = vec![
            json!({"name": "id", "type": "long", "nullable": true, "metadata": {}}),
            json!({"name": "part", "type": "string", "nullable": true, "metadata": {}}),
        ];
        if with_c {
            fields.push(json!({"name": "c", "type": "long", "nullable": true, "metadata": {}}));
        }
        let schema = json!({"type": "struct", "fields": fields}).to_string();
        json!({"id": "t", "format": {"provider": "parquet", "options": {}},
            "schemaString": schema, "partitionColumns": ["part"], "createdTime": 1,
            "configuration": configuration})
    }

    fn protocol_of() -> Value {
        json!({"minReaderVersion": 1, "minWriterVersion": 2})
    }

    /// The add of `path` (partition `p<version % 3>`) whose ids span `low..=low + 9`, and
    /// whose `c` is `version` once the column exists.
    fn add(path: &str, version: u64, low: u64) -> Value {
        let mut min = json!({"id": low});
        let mut max = json!({"id": low + 9});
        let mut nulls = json!({"id": 0});
        if version >= NEW_COLUMN_AT {
            min["c"] = json!(version);
            max["c"] = json!(version);
            nulls["c"] = json!(0);
        }
        let stats = json!({"numRecords": 10, "minValues": min, "maxValues": max,
            "nullCount": nulls});
        json!({"add": {"path": path, "partitionValues": {"part": format!("p{}", version % 3)},
            "size": 1, "modificationTime": 1, "dataChange": true,
            "stats": stats.to_string()}})
    }

    /// A JSON-only log of [`COMMITS`] + 1 versions: each commit adds a file, every seventh
    /// removes an older one, every eleventh adds an older path again with other statistics,
    /// and version [`NEW_COLUMN_AT`] adds the column `c`.
    fn write_log(dir: &tempfile::TempDir) {
        let log = dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        let mut first = vec![
            json!({"protocol": protocol_of()}),
            json!({"metaData": metadata(false, json!({}))}),
        ];
        first.push(add("f0.parquet", 0, 0));
        let mut commits = vec![first];
        for version in 1..=COMMITS {
            let mut actions = vec![add(&format!("f{version}.parquet"), version, version * 10)];
            if version % 7 == 0 {
                actions.push(
                    json!({"remove": {"path": format!("f{}.parquet", version - 5),
                    "deletionTimestamp": 1, "dataChange": true}}),
                );
            }
            if version % 11 == 0 {
                let again = version - 3;
                actions.push(add(
                    &format!("f{again}.parquet"),
                    version,
                    (version * 37) % 3000,
                ));
            }
            if version == NEW_COLUMN_AT {
                actions.push(json!({"metaData": metadata(true, json!({}))}));
            }
            commits.push(actions);
        }
        for (version, actions) in commits.iter().enumerate() {
            let lines: String = actions.iter().map(|action| format!("{action}\n")).collect();
            std::fs::write(log.join(format!("{version:020}.json")), lines).unwrap();
        }
    }

    fn paths_of(batches: &[arrow_array::RecordBatch]) -> Vec<String> {
        let mut paths: Vec<String> = batches
            .iter()
            .flat_map(|batch| {
                let paths = batch.column_by_name("path").unwrap().as_string::<i32>();
                paths
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        paths.sort();
        paths
    }

    /// For every filter: the files of the filtered snapshot are those a filtered scan of the
    /// full snapshot keeps, and the head is the full snapshot's.
    async fn assert_filtered_listings(table: &Table) {
        let full = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let all = paths_of(&full.files(false).await.unwrap().1);
        for sql in FILTERS {
            let filter = parse_sql(sql).unwrap();
            let options = ScanOptions {
                filter: Some(filter.clone()),
                ..ScanOptions::default()
            };
            let expected = paths_of(Scan::new(&full, options).await.unwrap().files());
            let filtered = table
                .snapshot_matching(SnapshotAt::Latest, &filter)
                .await
                .unwrap();
            let listed = paths_of(&filtered.files(true).await.unwrap().1);
            assert_eq!(listed, expected, "{sql}");
            assert!(
                listed.len() < all.len() || *sql == "c IS NULL",
                "{sql}: skips nothing"
            );
            assert_eq!(filtered.version(), full.version());
            assert_eq!(filtered.metadata(), full.metadata());
            assert_eq!(filtered.protocol(), full.protocol());
        }
    }

    #[tokio::test]
    async fn a_filtered_load_of_commits_in_chunks_lists_what_a_filtered_scan_keeps() {
        let dir = tempfile::tempdir().unwrap();
        write_log(&dir);
        assert_filtered_listings(&table(&dir)).await;
    }

    #[tokio::test]
    async fn a_filtered_load_after_a_checkpoint_lists_what_a_filtered_scan_keeps() {
        for at in [NEW_COLUMN_AT - 50, NEW_COLUMN_AT + 50, COMMITS] {
            let dir = tempfile::tempdir().unwrap();
            write_log(&dir);
            let table = table(&dir);
            table.checkpoint(Some(at)).await.unwrap();
            for version in 0..=at {
                let commit = dir.path().join(format!("_delta_log/{version:020}.json"));
                std::fs::remove_file(commit).unwrap();
            }
            assert_filtered_listings(&table).await;
        }
    }

    /// The `.crc` file of the version with `metadata` and `protocol`.
    fn write_checksum(dir: &tempfile::TempDir, metadata: Value) {
        let checksum = json!({"tableSizeBytes": 1, "numFiles": 1, "numMetadata": 1,
            "numProtocol": 1, "protocol": protocol_of(), "metadata": metadata,
            "setTransactions": [], "domainMetadata": []});
        let name = format!("_delta_log/{COMMITS:020}.crc");
        std::fs::write(dir.path().join(name), checksum.to_string()).unwrap();
    }

    #[tokio::test]
    async fn a_filtered_load_judges_by_the_checksum_only_when_the_log_agrees() {
        let dir = tempfile::tempdir().unwrap();
        write_log(&dir);
        write_checksum(&dir, metadata(true, json!({})));
        assert_filtered_listings(&table(&dir)).await;
        // A checksum whose metadata keeps no statistics would keep every file if trusted.
        let none_indexed = json!({"delta.dataSkippingNumIndexedCols": "0"});
        write_checksum(&dir, metadata(true, none_indexed));
        assert_filtered_listings(&table(&dir)).await;
        std::fs::write(
            dir.path().join(format!("_delta_log/{COMMITS:020}.crc")),
            "{",
        )
        .unwrap();
        assert_filtered_listings(&table(&dir)).await;
    }

    #[tokio::test]
    async fn the_head_of_a_filtered_load_comes_from_the_checksum_without_reading_commits() {
        let dir = tempfile::tempdir().unwrap();
        write_log(&dir);
        write_checksum(&dir, metadata(true, json!({})));
        let storage = table(&dir).storage().clone();
        let segment = crate::log::locate_segment(&storage, None).await.unwrap();
        // The first commit, which holds the protocol, is never read for the head.
        std::fs::write(dir.path().join(format!("_delta_log/{:020}.json", 0)), "{").unwrap();
        let super::LogHead {
            protocol, metadata, ..
        } = super::newest_protocol_and_metadata(&storage, &segment)
            .await
            .unwrap();
        let expected: crate::actions::Protocol = serde_json::from_value(protocol_of()).unwrap();
        assert_eq!(protocol, Some(expected));
        assert!(metadata.is_some());
    }

    #[tokio::test]
    async fn without_a_checksum_the_head_is_the_newest_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        write_log(&dir);
        let storage = table(&dir).storage().clone();
        let segment = crate::log::locate_segment(&storage, None).await.unwrap();
        let super::LogHead {
            protocol, metadata, ..
        } = super::newest_protocol_and_metadata(&storage, &segment)
            .await
            .unwrap();
        assert!(protocol.is_some());
        let full = table(&dir).snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(metadata.as_ref(), Some(full.metadata()));
    }
}
