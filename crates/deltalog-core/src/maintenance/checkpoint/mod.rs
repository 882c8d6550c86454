//! Writing checkpoints (spec "Checkpoints", "Checkpoint Specs", "Checkpoint Naming Scheme",
//! "Sidecar Files", "Last Checkpoint File").
//!
//! A checkpoint holds the reconciled state of one version: the protocol, the metadata, every
//! `txn`, every domain that is not removed, the live `add` actions and the `remove` tombstones
//! not yet expired (`delta.deletedFileRetentionDuration`); never `commitInfo` nor `cdc`. Its
//! rows come from the snapshot's Arrow state ([`rows`]), are laid out as Delta on Spark lays
//! out its checkpoints ([`schema`]) and are streamed to Parquet ([`out`]) a chunk at a time.
//!
//! The kind follows the table, as Delta on Spark decides it: a table whose
//! `delta.checkpointPolicy` is `v2` (which supports `v2Checkpoint`) gets a UUID-named V2
//! checkpoint (a JSON or Parquet manifest with `checkpointMetadata`, its file actions in
//! sidecars under `_delta_log/_sidecars/`, or in the manifest itself), and on request its
//! classic-named copy ([`compat`]); any other table a classic single file, or a multi-part
//! checkpoint when [`CheckpointOptions::part_size`] asks for one and the actions exceed it
//! (rows placed by Spark's hash partitioning, [`hash`]).
//! Every file is written under its final name in one atomic step; `_last_checkpoint` follows,
//! with its checksum, and never moves back to an older version.

pub(crate) mod compat;
mod dry_run;
mod hash;
mod incremental;
mod out;
pub(crate) mod rows;
pub(crate) mod schema;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, RecordBatch, StringArray, StructArray};
use bytes::Bytes;

use crate::actions::layout::add;
use crate::actions::unique_dv_id;
use crate::error::{Error, Result};
use crate::log::last_checkpoint::{
    parse_last_checkpoint, write_last_checkpoint, LastCheckpointHint,
};
use crate::log::path::{
    classic_checkpoint_file_name, multi_part_checkpoint_file_name, uuid_checkpoint_file_name,
    CheckpointFormat, LAST_CHECKPOINT_FILE, SIDECARS_DIR,
};
use crate::replay::load::{load_checkpoint_delta, TableState};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::properties::CheckpointPolicy;
use crate::table_config::{TableConfiguration, TableFeature};
use crate::util::time::{duration_ms, now_ms};
use incremental::{file_action_batches, Base};
use out::ParquetFileOut;
use rows::{
    checkpoint_adds, checkpoint_removes, json_rows, kept_tombstones, non_file_action_lines,
    single_column_batch,
};
use schema::{column, CheckpointLayout};

/// How to write a checkpoint. The defaults write what Delta on Spark writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Actions per part of a classic checkpoint (Spark's `checkpoint.partSize`): when the
    /// checkpoint has more actions, it is written as `ceil(actions / part_size)` parts. `None`
    /// (the default) writes one file. For a V2 checkpoint (where multi-part ones are
    /// forbidden) it is, as in Delta on Spark, the file actions per sidecar, in place of
    /// [`CheckpointOptions::sidecar_actions`].
    pub part_size: Option<u64>,
    /// The format of a V2 checkpoint's manifest; `None` (the default) lets
    /// [`CheckpointOptions::manifest_format`] decide: JSON, as Delta on Spark writes it (its
    /// `checkpointV2.topLevelFileFormat` setting), or Parquet when `v2_sidecars` is false.
    pub v2_format: Option<CheckpointFormat>,
    /// Put a V2 checkpoint's file actions in sidecar files (default true); a JSON manifest
    /// always uses sidecars.
    pub v2_sidecars: bool,
    /// File actions per sidecar file. Default 50,000 (Delta on Spark's part size for V2
    /// checkpoints).
    pub sidecar_actions: u64,
    /// With a V2 checkpoint, also write its classic-named copy `n.checkpoint.parquet` (spec
    /// "Handling Backward compatibility while moving to UUID-named v2 Checkpoints"), which
    /// readers that know only classic names can find. Default false: metadata cleanup writes
    /// it when it is about to delete log files, as Delta on Spark does.
    pub classic_compat: bool,
    /// Rows per Parquet row group, which bounds the memory a checkpoint takes to write.
    /// Default 65,536.
    pub row_group_rows: usize,
    /// Plan the checkpoint without writing anything (no checkpoint, sidecar, classic-named
    /// copy nor `_last_checkpoint`): the [`CheckpointResult`] returned describes what the
    /// write would produce. Default false.
    pub dry_run: bool,
}

impl CheckpointOptions {
    /// The format of a V2 checkpoint's manifest: [`CheckpointOptions::v2_format`] when given,
    /// else JSON (Delta on Spark's default), or Parquet when `v2_sidecars` is false, since a
    /// JSON manifest written here always puts its file actions in sidecars (spec "Checkpoint
    /// Naming Scheme" allows either).
    pub fn manifest_format(&self) -> CheckpointFormat {
        match (self.v2_format, self.v2_sidecars) {
            (Some(format), _) => format,
            (None, true) => CheckpointFormat::Json,
            (None, false) => CheckpointFormat::Parquet,
        }
    }

    /// Whether a V2 checkpoint puts its file actions in sidecars: when asked to, and always
    /// with a JSON manifest.
    fn uses_sidecars(&self) -> bool {
        self.v2_sidecars || self.manifest_format() == CheckpointFormat::Json
    }

    /// File actions per sidecar: `part_size` when given (as Delta on Spark), else
    /// `sidecar_actions`.
    fn actions_per_sidecar(&self) -> u64 {
        self.part_size.unwrap_or(self.sidecar_actions)
    }
}

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions {
            part_size: None,
            v2_format: None,
            v2_sidecars: true,
            sidecar_actions: 50_000,
            classic_compat: false,
            row_group_rows: 64 * 1024,
            dry_run: false,
        }
    }
}

/// What a checkpoint wrote, or with [`CheckpointOptions::dry_run`] would write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointResult {
    /// The version checkpointed.
    pub version: u64,
    /// `classic`, `multi-part` or `v2`.
    pub kind: &'static str,
    /// The checkpoint files (URLs): one, every part, or the V2 manifest followed by its
    /// classic-named copy when one was asked for.
    pub files: Vec<String>,
    /// The sidecar files of a V2 checkpoint (URLs).
    pub sidecars: Vec<String>,
    /// Actions in the checkpoint, sidecars included (`_last_checkpoint.size`).
    pub num_actions: u64,
    /// `add` actions in the checkpoint.
    pub num_add_files: u64,
    /// Bytes of every file written (the classic-named copy included); 0 for a dry run, as
    /// the sizes are unknown before writing.
    pub size_in_bytes: u64,
    /// True when nothing was written: the files named are those the write would produce. A
    /// V2 checkpoint's manifest and sidecars are named with UUIDs drawn for the plan; the
    /// real write draws fresh ones.
    pub dry_run: bool,
    /// The version of the previous checkpoint whose rows this one carried over (written
    /// incrementally: its rows minus those the later commits supersede, plus theirs); `None`
    /// when it was written from the commits alone or from the whole state replayed.
    pub incremental_from: Option<u64>,
}

/// Writes a checkpoint of `version` (`None`: the latest) with `options`, of the kind the
/// table's properties ask for ([`crate::Table::checkpoint_with`]).
pub(crate) async fn checkpoint(
    storage: &Storage,
    version: Option<u64>,
    options: &CheckpointOptions,
) -> Result<CheckpointResult> {
    let at = version.map_or(SnapshotAt::Latest, SnapshotAt::Version);
    // The file list is replayed only if the checkpoint cannot be written incrementally.
    let snapshot = Snapshot::load_lazy(storage, at).await?;
    write_checkpoint(&snapshot, options).await
}

/// Writes a checkpoint of `snapshot`'s version and then `_last_checkpoint`: incrementally
/// when it can ([`incremental`]), else from the whole state replayed.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) async fn write_checkpoint(
    snapshot: &Snapshot,
    options: &CheckpointOptions,
) -> Result<CheckpointResult> {
    match write_checkpoint_with(snapshot, options, FullReplay::Allowed).await? {
        CheckpointOutcome::Written(written) => Ok(written),
        CheckpointOutcome::NeedsFullReplay(reason) => Err(Error::internal_invariant(format!(
            "a checkpoint allowed to replay the whole state was refused: {reason}"
        ))),
    }
}

/// Whether a checkpoint that cannot be written incrementally may replay the whole state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FullReplay {
    Allowed,
    /// The post-commit checkpoint of a write: it is deferred instead.
    Refused,
}

/// What [`write_checkpoint_with`] did.
#[derive(Debug)]
pub(crate) enum CheckpointOutcome {
    Written(CheckpointResult),
    /// Nothing was written: the checkpoint would need the whole state replayed (why).
    NeedsFullReplay(String),
}

/// [`write_checkpoint`], refusing a full replay when `full` says so.
///
/// A checkpoint is written incrementally from the previous one (or, without one, from the
/// commits) unless it is a dry run, may be multi-part (whose rows are placed by a hash over
/// the whole set), or the previous checkpoint is a JSON V2 checkpoint holding file actions.
pub(crate) async fn write_checkpoint_with(
    snapshot: &Snapshot,
    options: &CheckpointOptions,
    full: FullReplay,
) -> Result<CheckpointOutcome> {
    if options.part_size == Some(0) || options.sidecar_actions == 0 {
        return Err(Error::InvalidArgument(
            "part_size and sidecar_actions must be at least 1".into(),
        ));
    }
    let planned = match plan_incremental(snapshot, options).await? {
        Ok(planned) => planned,
        Err(reason) if full == FullReplay::Refused => {
            return Ok(CheckpointOutcome::NeedsFullReplay(reason));
        }
        Err(_) => plan_from_state(snapshot, options).await?,
    };
    let storage = snapshot.storage();
    let Planned { content, kind } = planned;
    if options.dry_run {
        return dry_run::describe(storage, &content, kind, options).map(CheckpointOutcome::Written);
    }
    let mut manifest = None;
    let mut written = match kind {
        WriteKind::V2 => {
            let (written, path) = write_v2(storage, &content, options).await?;
            manifest = Some(path);
            written
        }
        WriteKind::MultiPart { part_size } => {
            write_multi_part(storage, &content, options, part_size).await?
        }
        WriteKind::Classic => write_classic(storage, &content, options).await?,
    };
    written.incremental_from = content.base.as_ref().map(|base| base.version);
    let hint = LastCheckpointHint {
        version: written.version,
        size: Some(to_i64(written.num_actions)),
        parts: (written.kind == "multi-part").then_some(written.files.len() as u32),
        size_in_bytes: Some(to_i64(written.size_in_bytes)),
        num_of_add_files: Some(to_i64(written.num_add_files)),
        checkpoint_schema: Some(content.layout.schema_json()?),
        ..LastCheckpointHint::default()
    };
    write_hint(storage, &hint).await?;
    if let Some(manifest) = manifest.filter(|_| options.classic_compat) {
        let copy = compat::write_classic_copy(
            storage,
            &content.config,
            &manifest,
            options.manifest_format(),
            written.version,
            options.row_group_rows,
        )
        .await?;
        written.files.push(copy.url);
        written.size_in_bytes += copy.size;
    }
    Ok(CheckpointOutcome::Written(written))
}

/// A checkpoint's rows and the kind of files they go to.
struct Planned {
    content: Content,
    kind: WriteKind,
}

/// The checkpoint planned on the previous checkpoint and the commits after it; `Err` (why)
/// when it cannot be (see [`write_checkpoint_with`]).
async fn plan_incremental(
    snapshot: &Snapshot,
    options: &CheckpointOptions,
) -> Result<std::result::Result<Planned, String>> {
    if options.dry_run {
        return Ok(Err("a dry run plans from the whole state".into()));
    }
    let snapshot_config = snapshot.table_configuration();
    if options.part_size.is_some()
        && !snapshot_config.is_feature_supported(&TableFeature::V2Checkpoint)
    {
        return Ok(Err(
            "a multi-part checkpoint places its rows by a hash over the whole state".into(),
        ));
    }
    let storage = snapshot.storage();
    let segment = snapshot.log_segment().await?;
    let delta = load_checkpoint_delta(storage, snapshot.table_uri(), &segment).await?;
    let config = Arc::new(TableConfiguration::try_new(
        delta.state.protocol.clone(),
        delta.state.metadata.clone(),
        snapshot.table_uri(),
    )?);
    let (v2, v2_supported, layout) = layout_of(&config)?;
    let cutoff = tombstone_cutoff(&config);
    let base = match Base::locate(storage, &segment, &delta, cutoff).await? {
        Some(base) => Some(base),
        None if segment.checkpoint.is_some() => {
            return Ok(Err(
                "the previous checkpoint is a JSON V2 checkpoint holding file actions".into(),
            ));
        }
        None => None,
    };
    let mut content = Content::new(&delta.state, &config, layout, cutoff)?;
    content.base = base;
    let kind = WriteKind::decide(v2, v2_supported, options, &content);
    Ok(Ok(Planned { content, kind }))
}

/// The checkpoint planned on the whole state of `snapshot`, replayed.
async fn plan_from_state(snapshot: &Snapshot, options: &CheckpointOptions) -> Result<Planned> {
    let config = Arc::new(snapshot.table_configuration().clone());
    let (v2, v2_supported, layout) = layout_of(&config)?;
    // A dry run writes no rows: it counts the actions, for which no statistics are needed.
    let needs_stats = layout.stats_json || layout.stats_parsed.is_some();
    let state = match needs_stats && !options.dry_run {
        true => snapshot.state_with_stats().await?,
        false => snapshot.replayed().await?,
    };
    let content = Content::new(state, &config, layout, tombstone_cutoff(&config))?;
    let kind = WriteKind::decide(v2, v2_supported, options, &content);
    Ok(Planned { content, kind })
}

/// Whether the table's checkpoints are V2, whether it supports `v2Checkpoint`, and the layout
/// of its checkpoint rows. Multi-part checkpoints are forbidden once `v2Checkpoint` is
/// supported (spec "Multi-part checkpoint"), whatever the policy.
fn layout_of(config: &TableConfiguration) -> Result<(bool, bool, Arc<CheckpointLayout>)> {
    let v2_supported = config.is_feature_supported(&TableFeature::V2Checkpoint);
    let v2 = v2_supported && config.properties().checkpoint_policy == CheckpointPolicy::V2;
    Ok((
        v2,
        v2_supported,
        Arc::new(CheckpointLayout::new(config, v2)?),
    ))
}

/// Tombstones deleted at or before this time have expired
/// (`delta.deletedFileRetentionDuration`).
fn tombstone_cutoff(config: &TableConfiguration) -> i64 {
    now_ms().saturating_sub(duration_ms(
        config.properties().deleted_file_retention_duration,
    ))
}

/// The kind of checkpoint a write produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    /// A UUID-named V2 checkpoint.
    V2,
    /// A classic checkpoint in parts of at most `part_size` actions.
    MultiPart { part_size: u64 },
    /// A classic single-file checkpoint.
    Classic,
}

impl WriteKind {
    /// Decided as Delta on Spark decides it: V2 when the table's policy (`v2`) asks for it;
    /// multi-part when a part size is given, the actions exceed it and `v2Checkpoint` is not
    /// supported (spec "Multi-part checkpoint": forbidden then, whatever the policy); else
    /// classic.
    fn decide(
        v2: bool,
        v2_supported: bool,
        options: &CheckpointOptions,
        content: &Content,
    ) -> WriteKind {
        match (v2, options.part_size) {
            (true, _) => WriteKind::V2,
            (false, Some(part_size)) if !v2_supported && content.num_actions() > part_size => {
                WriteKind::MultiPart { part_size }
            }
            (false, _) => WriteKind::Classic,
        }
    }

    /// `classic`, `multi-part` or `v2`, as [`CheckpointResult::kind`] names it.
    fn name(self) -> &'static str {
        match self {
            WriteKind::V2 => "v2",
            WriteKind::MultiPart { .. } => "multi-part",
            WriteKind::Classic => "classic",
        }
    }
}

/// The rows of one checkpoint, in chunks of at most a row group.
struct Content {
    version: u64,
    config: Arc<TableConfiguration>,
    layout: Arc<CheckpointLayout>,
    non_file_lines: Vec<String>,
    adds: Vec<StructArray>,
    removes: Vec<StructArray>,
    uses_deletion_vectors: bool,
    /// The previous checkpoint whose rows are carried over, streamed when written; the adds
    /// and removes above are then only those of the commits after it.
    base: Option<Base>,
}

impl Content {
    fn new(
        state: &TableState,
        config: &Arc<TableConfiguration>,
        layout: Arc<CheckpointLayout>,
        cutoff_ms: i64,
    ) -> Result<Content> {
        let mut txns: Vec<_> = state.txns.values().collect();
        txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
        let mut domains: Vec<_> = state.domains.values().collect();
        domains.sort_by(|a, b| a.domain.cmp(&b.domain));
        let non_file_lines =
            non_file_action_lines(config.protocol(), config.metadata(), &txns, &domains)?;
        let mut removes = Vec::new();
        for tombstones in &state.files.removes {
            removes.extend(kept_tombstones(tombstones, cutoff_ms)?);
        }
        Ok(Content {
            version: state.version,
            config: config.clone(),
            layout,
            non_file_lines,
            adds: state
                .files
                .adds
                .iter()
                .filter(|a| !a.is_empty())
                .cloned()
                .collect(),
            removes,
            uses_deletion_vectors: config.is_feature_supported(&TableFeature::DeletionVectors),
            base: None,
        })
    }

    /// The adds held in memory (all of them without a [`Content::base`]).
    fn num_adds(&self) -> u64 {
        self.adds.iter().map(|a| a.len() as u64).sum()
    }

    fn num_file_actions(&self) -> u64 {
        self.num_adds() + self.removes.iter().map(|r| r.len() as u64).sum::<u64>()
    }

    /// The actions held in memory (all of them without a [`Content::base`]).
    fn num_actions(&self) -> u64 {
        self.non_file_lines.len() as u64 + self.num_file_actions()
    }

    /// The file-action chunks: `(is_add, rows)`, each at most `rows_per_chunk` long.
    fn file_chunks(&self, rows_per_chunk: usize) -> Vec<(bool, StructArray)> {
        let rows_per_chunk = rows_per_chunk.max(1);
        let adds = self.adds.iter().map(|a| (true, a));
        let removes = self.removes.iter().map(|r| (false, r));
        let mut chunks = Vec::new();
        for (is_add, array) in adds.chain(removes) {
            let mut offset = 0;
            while offset < array.len() {
                let len = rows_per_chunk.min(array.len() - offset);
                chunks.push((is_add, array.slice(offset, len)));
                offset += len;
            }
        }
        chunks
    }

    /// Writes the file-action chunks of `chunks` to `file` as rows of `schema`, keeping only
    /// the rows `select` marks (all when `None`).
    async fn write_file_chunks(
        &self,
        file: &mut ParquetFileOut,
        chunks: &[(bool, StructArray)],
        schema: &arrow_schema::SchemaRef,
        select: Option<&[BooleanArray]>,
    ) -> Result<()> {
        for (index, (is_add, chunk)) in chunks.iter().enumerate() {
            let (is_add, chunk) = (*is_add, chunk.clone());
            let mask = select.and_then(|masks| masks.get(index)).cloned();
            let layout = self.layout.clone();
            let config = self.config.clone();
            let schema = schema.clone();
            file.write_with(move || {
                let chunk = match mask {
                    Some(mask) if mask.true_count() == 0 => return Ok(None),
                    Some(mask) => arrow::compute::filter(&chunk, &mask)
                        .map_err(|error| Error::arrow("checkpoint parts", error))?
                        .as_struct()
                        .clone(),
                    None => chunk,
                };
                file_action_batch(&layout, &config, &schema, is_add, &chunk)
            })
            .await?;
        }
        Ok(())
    }
}

/// The checkpoint rows of one chunk of internal adds or kept removes, as a batch of `schema`.
fn file_action_batch(
    layout: &CheckpointLayout,
    config: &TableConfiguration,
    schema: &arrow_schema::SchemaRef,
    is_add: bool,
    chunk: &StructArray,
) -> Result<Option<RecordBatch>> {
    if is_add {
        let adds = checkpoint_adds(layout, config, chunk)?;
        return single_column_batch(schema, column::ADD, adds).map(Some);
    }
    match checkpoint_removes(layout, chunk, i64::MIN)? {
        Some(removes) => single_column_batch(schema, column::REMOVE, removes).map(Some),
        None => Ok(None),
    }
}

async fn write_classic(
    storage: &Storage,
    content: &Content,
    options: &CheckpointOptions,
) -> Result<CheckpointResult> {
    let path = storage.log_file(&classic_checkpoint_file_name(content.version));
    let schema = content.layout.schema.clone();
    let mut file = ParquetFileOut::create(storage, &path, schema.clone(), options.row_group_rows)?;
    let result = async {
        write_non_file_rows(&mut file, content, &[]).await?;
        let mut batches = file_action_batches(storage, content, schema, options.row_group_rows);
        let mut adds = 0;
        while let Some(batch) = batches.next().await {
            let batch = batch?;
            adds += add_count(&batch);
            file.write_with(move || Ok(Some(batch))).await?;
        }
        Ok::<u64, Error>(adds)
    }
    .await;
    let adds = match result {
        Ok(adds) => adds,
        Err(error) => {
            file.abort().await;
            return Err(error);
        }
    };
    let name = file.name().to_string();
    let rows = file.rows();
    let size = file.finish().await?;
    Ok(CheckpointResult {
        version: content.version,
        kind: "classic",
        files: vec![name],
        sidecars: Vec::new(),
        num_actions: rows,
        num_add_files: adds,
        size_in_bytes: size,
        dry_run: false,
        incremental_from: None,
    })
}

/// The `add` actions in `batch` (rows of a checkpoint or sidecar schema).
fn add_count(batch: &RecordBatch) -> u64 {
    batch
        .column_by_name(column::ADD)
        .map_or(0, |adds| (adds.len() - adds.null_count()) as u64)
}

/// Writes the non-file actions, and `extra` JSON lines (V2 actions), as one batch.
async fn write_non_file_rows(
    file: &mut ParquetFileOut,
    content: &Content,
    extra: &[String],
) -> Result<()> {
    let mut lines = content.non_file_lines.clone();
    lines.extend_from_slice(extra);
    let schema = content.layout.schema.clone();
    file.write_with(move || json_rows(&lines, &schema).map(Some))
        .await
}

async fn write_multi_part(
    storage: &Storage,
    content: &Content,
    options: &CheckpointOptions,
    part_size: u64,
) -> Result<CheckpointResult> {
    let num_parts = num_parts(content, part_size)?;
    let chunks = content.file_chunks(options.row_group_rows);
    let uses_dvs = content.uses_deletion_vectors;
    let assigned = {
        let chunks = chunks.clone();
        crate::util::cpu::run(
            move || {
                chunks
                    .iter()
                    .map(|(_, chunk)| part_indexes(chunk, uses_dvs, num_parts))
                    .collect::<Result<Vec<_>>>()
            },
            |reason| Error::internal_invariant(format!("placing checkpoint rows: {reason}")),
        )
        .await?
    };
    let non_file_part = hash::part_of(None, None, num_parts);
    let schema = content.layout.schema.clone();
    let mut written = CheckpointResult {
        version: content.version,
        kind: "multi-part",
        files: Vec::new(),
        sidecars: Vec::new(),
        num_actions: 0,
        num_add_files: content.num_adds(),
        size_in_bytes: 0,
        dry_run: false,
        incremental_from: None,
    };
    for part in 0..num_parts {
        let name = multi_part_checkpoint_file_name(content.version, part + 1, num_parts);
        let path = storage.log_file(&name);
        let mut file =
            ParquetFileOut::create(storage, &path, schema.clone(), options.row_group_rows)?;
        let masks: Vec<BooleanArray> = assigned
            .iter()
            .map(|parts| parts.iter().map(|p| Some(*p == part)).collect())
            .collect();
        let result = async {
            if part == non_file_part {
                write_non_file_rows(&mut file, content, &[]).await?;
            }
            content
                .write_file_chunks(&mut file, &chunks, &schema, Some(&masks))
                .await
        }
        .await;
        if let Err(error) = result {
            file.abort().await;
            return Err(error);
        }
        written.files.push(file.name().to_string());
        written.num_actions += file.rows();
        written.size_in_bytes += file.finish().await?;
    }
    Ok(written)
}

/// The number of parts of a multi-part checkpoint of `content` in parts of `part_size`.
fn num_parts(content: &Content, part_size: u64) -> Result<u32> {
    u32::try_from(content.num_actions().div_ceil(part_size))
        .map_err(|_| Error::InvalidArgument("too many checkpoint parts".into()))
}

/// The 0-based part of every row of `chunk` (see [`hash::part_of`]).
fn part_indexes(chunk: &StructArray, uses_dvs: bool, num_parts: u32) -> Result<Vec<u32>> {
    let paths = chunk
        .column_by_name(add::PATH)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::internal_invariant("file actions have a `path` column"))?;
    let dvs = chunk
        .column_by_name(add::DELETION_VECTOR)
        .map(|c| c.as_struct())
        .filter(|_| uses_dvs);
    Ok((0..chunk.len())
        .map(|row| {
            let path = paths.is_valid(row).then(|| paths.value(row));
            let dv_id = dvs.and_then(|dvs| dv_id_at(dvs, row));
            hash::part_of(path, dv_id.as_deref(), num_parts)
        })
        .collect())
}

fn dv_id_at(dvs: &StructArray, row: usize) -> Option<String> {
    if !dvs.is_valid(row) {
        return None;
    }
    let string = |name: &str| {
        dvs.column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row).to_string())
    };
    let offset = dvs
        .column_by_name("offset")
        .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int32Type>())
        .filter(|c| c.is_valid(row))
        .map(|c| c.value(row));
    Some(unique_dv_id(
        &string("storageType")?,
        &string("pathOrInlineDv")?,
        offset,
    ))
}

/// Writes a UUID-named V2 checkpoint; returns it with the manifest's path.
async fn write_v2(
    storage: &Storage,
    content: &Content,
    options: &CheckpointOptions,
) -> Result<(CheckpointResult, object_store::path::Path)> {
    let use_sidecars = options.uses_sidecars();
    let format = options.manifest_format();
    let mut written = CheckpointResult {
        version: content.version,
        kind: "v2",
        files: Vec::new(),
        sidecars: Vec::new(),
        num_actions: 0,
        num_add_files: 0,
        size_in_bytes: 0,
        dry_run: false,
        incremental_from: None,
    };
    let mut sidecar_lines = Vec::new();
    if use_sidecars {
        let (sidecars, adds) = write_sidecars(storage, content, options).await?;
        written.num_add_files = adds;
        for sidecar in sidecars {
            written.num_actions += sidecar.rows;
            written.size_in_bytes += sidecar.size;
            written.sidecars.push(storage.url_of(&sidecar.path));
            sidecar_lines.push(sidecar.line);
        }
    }
    let mut extra = vec![serde_json::json!({
        "checkpointMetadata": {"version": content.version, "tags": {}}
    })
    .to_string()];
    extra.extend(sidecar_lines);
    let uuid = uuid::Uuid::new_v4().to_string();
    let name = uuid_checkpoint_file_name(content.version, &uuid, format);
    let path = storage.log_file(&name);
    match format {
        CheckpointFormat::Json => {
            let mut lines = content.non_file_lines.clone();
            lines.extend(extra);
            let text = lines.join("\n") + "\n";
            written.num_actions += lines.len() as u64;
            written.size_in_bytes += text.len() as u64;
            if !storage.put_if_absent(&path, Bytes::from(text)).await? {
                return Err(Error::InvalidArgument(format!(
                    "{} already exists",
                    storage.url_of(&path)
                )));
            }
            written.files.push(storage.url_of(&path));
        }
        CheckpointFormat::Parquet => {
            let schema = content.layout.schema.clone();
            let mut file =
                ParquetFileOut::create(storage, &path, schema.clone(), options.row_group_rows)?;
            let result = async {
                write_non_file_rows(&mut file, content, &extra).await?;
                if !use_sidecars {
                    let mut batches =
                        file_action_batches(storage, content, schema, options.row_group_rows);
                    while let Some(batch) = batches.next().await {
                        let batch = batch?;
                        written.num_add_files += add_count(&batch);
                        file.write_with(move || Ok(Some(batch))).await?;
                    }
                }
                Ok::<(), Error>(())
            }
            .await;
            if let Err(error) = result {
                file.abort().await;
                return Err(error);
            }
            written.files.push(file.name().to_string());
            written.num_actions += file.rows();
            written.size_in_bytes += file.finish().await?;
        }
    }
    Ok((written, path))
}

/// One sidecar written, with the `sidecar` action that names it.
struct SidecarWritten {
    path: object_store::path::Path,
    rows: u64,
    size: u64,
    line: String,
}

/// Writes the file actions of `content` into sidecars of `actions_per_sidecar` rows each, the
/// last one holding the rest (spec "Sidecar Files": uniquely named Parquet files in
/// `_delta_log/_sidecars/` holding only `add` and `remove`); returns them and the number of
/// `add` actions written.
async fn write_sidecars(
    storage: &Storage,
    content: &Content,
    options: &CheckpointOptions,
) -> Result<(Vec<SidecarWritten>, u64)> {
    let schema = content.layout.sidecar_schema.clone();
    let per_sidecar = options.actions_per_sidecar();
    let mut batches = file_action_batches(storage, content, schema.clone(), options.row_group_rows);
    let mut sidecars = Vec::new();
    let mut adds = 0;
    let mut open: Option<OpenSidecar> = None;
    let result = async {
        while let Some(batch) = batches.next().await {
            let mut batch = batch?;
            adds += add_count(&batch);
            while batch.num_rows() > 0 {
                let sidecar = match &mut open {
                    Some(sidecar) => sidecar,
                    None => open.insert(OpenSidecar::create(storage, &schema, options)?),
                };
                let room = per_sidecar.saturating_sub(sidecar.file.rows());
                let take = batch
                    .num_rows()
                    .min(usize::try_from(room).unwrap_or(usize::MAX));
                let head = batch.slice(0, take);
                batch = batch.slice(take, batch.num_rows() - take);
                sidecar.file.write_with(move || Ok(Some(head))).await?;
                if sidecar.file.rows() >= per_sidecar {
                    if let Some(full) = open.take() {
                        sidecars.push(full.finish().await?);
                    }
                }
            }
        }
        if let Some(last) = open.take() {
            sidecars.push(last.finish().await?);
        }
        Ok::<(), Error>(())
    }
    .await;
    if let Err(error) = result {
        if let Some(sidecar) = open {
            sidecar.file.abort().await;
        }
        return Err(error);
    }
    Ok((sidecars, adds))
}

/// A sidecar being written.
struct OpenSidecar {
    file: ParquetFileOut,
    /// Its file name, as the `sidecar` action names it.
    name: String,
    path: object_store::path::Path,
}

impl OpenSidecar {
    fn create(
        storage: &Storage,
        schema: &arrow_schema::SchemaRef,
        options: &CheckpointOptions,
    ) -> Result<OpenSidecar> {
        let (name, path) = new_sidecar_path(storage);
        let file = ParquetFileOut::create(storage, &path, schema.clone(), options.row_group_rows)?;
        Ok(OpenSidecar { file, name, path })
    }

    /// Completes the file and makes the `sidecar` action naming it.
    async fn finish(self) -> Result<SidecarWritten> {
        let rows = self.file.rows();
        let size = self.file.finish().await?;
        let line = serde_json::json!({"sidecar": {
            "path": self.name,
            "sizeInBytes": size,
            "modificationTime": now_ms(),
            "tags": {},
        }})
        .to_string();
        Ok(SidecarWritten {
            path: self.path,
            rows,
            size,
            line,
        })
    }
}

/// A fresh UUID-named sidecar: its file name (as the `sidecar` action names it) and path.
fn new_sidecar_path(storage: &Storage) -> (String, object_store::path::Path) {
    let file_name = format!("{}.parquet", uuid::Uuid::new_v4());
    let path = storage
        .log_dir()
        .clone()
        .join(SIDECARS_DIR)
        .join(file_name.as_str());
    (file_name, path)
}

/// Writes `_last_checkpoint` unless it already points at a newer checkpoint.
async fn write_hint(storage: &Storage, hint: &LastCheckpointHint) -> Result<()> {
    let path = storage.log_file(LAST_CHECKPOINT_FILE);
    if let Some(bytes) = storage.read_if_exists(&path).await? {
        let current = parse_last_checkpoint(&bytes, path.as_ref());
        if current.is_ok_and(|current| current.version > hint.version) {
            return Ok(());
        }
    }
    let bytes = write_last_checkpoint(hint)?;
    storage.put(&path, Bytes::from(bytes)).await
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
pub(crate) mod tests;
