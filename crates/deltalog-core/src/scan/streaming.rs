//! A table read as a stream of the data files its commits add, as Delta on Spark's streaming
//! source reads it (`DeltaSource`): an offset is a position `(version, index)` in that
//! sequence, and a micro-batch reads the files after one offset up to another.
//!
//! The sequence starts with the files of a snapshot (every live file of the version the stream
//! starts at, ordered by path; offsets with `snapshot` true), or at a given commit; then come
//! the files each later commit adds with `dataChange` true, in the commit's order (spec "Add
//! File and Remove File"). Commits that only rearrange data (`dataChange` false, such as
//! OPTIMIZE) add nothing to the stream. A commit that removes data (`remove` with `dataChange`
//! true: DELETE, UPDATE, MERGE, overwrite) cannot be expressed as appended rows and is refused,
//! unless `ignore_deletes` (skip commits that only remove) or `skip_change_commits` (skip every
//! such commit) says otherwise; so is a commit changing the schema or partition columns the
//! stream reads with.

use arrow::compute::{concat_batches, filter, sort_to_indices, take_record_batch};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, RecordBatch, StructArray, UInt32Array};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::actions::layout::add;
use crate::actions::{Metadata, Protocol};
use crate::error::{Error, Result};
use crate::log::commit_range::CommitRange;
use crate::replay::file_list::{active_files, FileListOptions};
use crate::scan::{Scan, ScanOptions, ScanTask};
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;
use crate::table_config::TableConfiguration;

/// A position in a table's stream of added files: after the file `index` (`-1`: before the
/// first) of `version`'s files, which are the snapshot's files when `snapshot` is true, else
/// the files commit `version` adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOffset {
    pub version: u64,
    pub index: i64,
    pub snapshot: bool,
}

/// Where a stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamStart {
    /// Every file of the latest version, then the commits after it (the default).
    LatestSnapshot,
    /// The files added by commit `version` and the commits after it (`startingVersion`).
    Version(u64),
    /// The commits from the first committed at or after this time, in ms since the epoch
    /// (`startingTimestamp`).
    Timestamp(i64),
}

/// How much a micro-batch reads and which commits it tolerates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// At most this many files per micro-batch (at least one is always read).
    pub max_files: Option<u64>,
    /// Files up to about this many bytes per micro-batch (at least one is always read).
    pub max_bytes: Option<u64>,
    /// Skip commits that remove data and add none.
    pub ignore_deletes: bool,
    /// Skip every commit that removes data (its added files too).
    pub skip_change_commits: bool,
    /// Read no commit after this version (the target of Spark's `Trigger.AvailableNow`).
    pub until_version: Option<u64>,
}

/// The files of a stream between two offsets and what reading them needs.
#[derive(Debug, Clone)]
pub struct StreamFiles {
    /// The offset after the last file taken (the start offset when none was).
    pub end: StreamOffset,
    /// The version whose protocol and metadata the files are read with.
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
    /// The files as rows of the file list (the columns of `Snapshot::files`).
    pub files: Vec<RecordBatch>,
    /// How many files, and their total size in bytes.
    pub num_files: u64,
    pub num_bytes: u64,
}

impl StreamFiles {
    /// The scan tasks reading these files (of `options.columns`), packed as by
    /// [`Scan::tasks`] into tasks of about `target_size` bytes: one micro-batch of a
    /// distributed stream, ready to travel to the readers. No files, no tasks.
    ///
    /// Errors as [`Scan::over_files`]: a protocol this library cannot read, a column the
    /// table does not have.
    pub fn tasks(
        self,
        storage: &Storage,
        options: ScanOptions,
        target_size: u64,
        open_cost: u64,
    ) -> Result<Vec<ScanTask>> {
        if self.num_files == 0 {
            return Ok(Vec::new());
        }
        let scan = Scan::over_files(
            storage,
            self.version,
            &self.protocol,
            &self.metadata,
            options,
            self.files,
        )?;
        scan.tasks(target_size, open_cost)
    }
}

impl StreamOffset {
    /// The offset before the first file of a stream starting at `start`. A version or time
    /// after the latest commit is a [`Error::VersionNotFound`] (as for a snapshot).
    pub async fn initial(storage: &Storage, start: StreamStart) -> Result<StreamOffset> {
        let (version, snapshot) = match start {
            StreamStart::LatestSnapshot => (crate::log::latest_version(storage).await?, true),
            StreamStart::Version(version) => {
                let latest = crate::log::latest_version(storage).await?;
                if version > latest {
                    return Err(Error::VersionNotFound {
                        table: storage.uri().to_string(),
                        version,
                        reason: format!("the latest version is {latest}"),
                    });
                }
                (version, false)
            }
            StreamStart::Timestamp(ms) => (first_version_at_or_after(storage, ms).await?, false),
        };
        Ok(StreamOffset {
            version,
            index: -1,
            snapshot,
        })
    }
}

/// The files after `start`: up to `end` when given (every file, whatever the limits), else as
/// many as `options` admit up to the latest version (or `options.until_version`). Files are
/// read with the protocol and metadata of the last version looked at.
///
/// Errors: [`Error::NotAllowed`] for a commit that removes data (see the module docs) or
/// changes the schema or partition columns, naming the version.
pub async fn stream_files(
    storage: &Storage,
    start: StreamOffset,
    end: Option<StreamOffset>,
    options: &StreamOptions,
) -> Result<StreamFiles> {
    let latest = crate::log::latest_version(storage).await?;
    let last = match end {
        Some(end) => end.version,
        None => options.until_version.unwrap_or(latest),
    }
    .min(latest);
    let read_version = last.max(start.version).min(latest);
    let read_snapshot = Snapshot::load(storage, SnapshotAt::Version(read_version)).await?;
    let config = read_snapshot.table_configuration().clone();
    let mut picker = Picker::new(start, end, options);
    if start.snapshot {
        let snapshot = match start.version == read_version {
            true => read_snapshot,
            false => Snapshot::load(storage, SnapshotAt::Version(start.version)).await?,
        };
        picker.take(start.version, true, snapshot_files(&snapshot).await?)?;
    }
    let first = start.version + u64::from(start.snapshot);
    if !picker.full && first <= last {
        read_commits(storage, &config, options, first, last, &mut picker).await?;
    }
    Ok(StreamFiles {
        end: picker.last.unwrap_or(start),
        version: read_version,
        protocol: config.protocol().clone(),
        metadata: config.metadata().clone(),
        files: picker.files,
        num_files: picker.count,
        num_bytes: picker.bytes,
    })
}

/// Takes the added files of the commits `first..=last` into `picker`, in order, until it is
/// full.
async fn read_commits(
    storage: &Storage,
    config: &TableConfiguration,
    options: &StreamOptions,
    first: u64,
    last: u64,
    picker: &mut Picker<'_>,
) -> Result<()> {
    let range = CommitRange::list(storage, first, Some(last)).await?;
    let mut commits = std::pin::pin!(range.stream(storage));
    let list_options = FileListOptions::default();
    while let Some(commit) = commits.next().await {
        let commit = commit?;
        let (version, name) = (commit.version, commit.name.clone());
        let actions = crate::util::cpu::run(
            move || commit.decode(false),
            |reason| Error::corrupt(name, reason),
        )
        .await?;
        if let Some(metadata) = &actions.metadata {
            ensure_same_shape(storage, config, metadata, version)?;
        }
        let adds = data_change_adds(&actions.file_actions)?;
        let removes = actions
            .file_actions
            .iter()
            .any(|batch| has_data_change(&batch.removes));
        if removes {
            let only_removes = adds.iter().all(|adds| adds.is_empty());
            if options.skip_change_commits || (options.ignore_deletes && only_removes) {
                continue;
            }
            return Err(Error::NotAllowed(format!(
                "version {version} of {} removes data (a delete, update, merge or overwrite): \
                 a streaming read takes only appended rows; set option skipChangeCommits to \
                 skip such commits, or ignoreDeletes to skip commits that only delete",
                storage.uri()
            )));
        }
        let (_, batches) = active_files(config, &adds, &list_options)?;
        for batch in batches {
            picker.take(version, false, batch)?;
            if picker.full {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Chooses the files of a micro-batch, in stream order.
struct Picker<'a> {
    start: StreamOffset,
    end: Option<StreamOffset>,
    options: &'a StreamOptions,
    files: Vec<RecordBatch>,
    count: u64,
    bytes: u64,
    last: Option<StreamOffset>,
    /// The end offset or a limit was reached: no later file is taken.
    full: bool,
    /// The index the next row of the current version gets.
    next_index: (u64, i64),
}

impl<'a> Picker<'a> {
    fn new(start: StreamOffset, end: Option<StreamOffset>, options: &'a StreamOptions) -> Self {
        Picker {
            start,
            end,
            options,
            files: Vec::new(),
            count: 0,
            bytes: 0,
            last: None,
            full: false,
            next_index: (start.version, 0),
        }
    }

    /// Takes the rows of `batch` (file-list rows of `version`'s files, following any rows of
    /// the same version given before) that lie after the start, until full.
    fn take(&mut self, version: u64, snapshot: bool, batch: RecordBatch) -> Result<()> {
        if self.next_index.0 != version {
            self.next_index = (version, 0);
        }
        let sizes = batch
            .column_by_name("size")
            .and_then(|column| column.as_primitive_opt::<Int64Type>())
            .cloned()
            .ok_or_else(|| {
                Error::internal_invariant("the file list has a `size` column of longs")
            })?;
        let mut taken = Vec::new();
        for row in 0..batch.num_rows() {
            let index = self.next_index.1 + row as i64;
            if (version, index) <= (self.start.version, self.start.index) {
                continue;
            }
            if let Some(end) = self.end {
                if (version, index) > (end.version, end.index) {
                    self.full = true;
                    break;
                }
            }
            taken.push(row as u32);
            self.count += 1;
            self.bytes += u64::try_from(sizes.value(row)).unwrap_or(0);
            self.last = Some(StreamOffset {
                version,
                index,
                snapshot,
            });
            if self.end.is_none() && self.limit_reached() {
                self.full = true;
                break;
            }
        }
        self.next_index.1 += batch.num_rows() as i64;
        if !taken.is_empty() {
            let indices = UInt32Array::from(taken);
            let rows = take_record_batch(&batch, &indices)
                .map_err(|source| Error::arrow("taking the files of a stream", source))?;
            self.files.push(rows);
        }
        Ok(())
    }

    fn limit_reached(&self) -> bool {
        let files = self.options.max_files.is_some_and(|max| self.count >= max);
        let bytes = self.options.max_bytes.is_some_and(|max| self.bytes >= max);
        files || bytes
    }
}

/// The live files of `snapshot`, one batch ordered by path (the order is the offsets'
/// meaning, so it must not depend on how the log was replayed).
async fn snapshot_files(snapshot: &Snapshot) -> Result<RecordBatch> {
    let (schema, batches) = snapshot.file_list(&FileListOptions::default()).await?;
    let arrow_error = |source| Error::arrow("ordering a snapshot's files", source);
    let all = concat_batches(&schema, &batches).map_err(arrow_error)?;
    let Some(paths) = all.column_by_name("path") else {
        return Ok(all);
    };
    let order = sort_to_indices(paths, None, None).map_err(arrow_error)?;
    take_record_batch(&all, &order).map_err(arrow_error)
}

/// The `add` rows of `batches` with `dataChange` true (or absent).
fn data_change_adds(
    batches: &[crate::actions::layout::FileActionBatch],
) -> Result<Vec<StructArray>> {
    batches
        .iter()
        .map(|batch| {
            let adds = &batch.adds;
            let mask: BooleanArray = (0..adds.len())
                .map(|row| Some(adds.is_valid(row) && data_change(adds, row)))
                .collect();
            let kept = filter(adds, &mask)
                .map_err(|source| Error::arrow("selecting added files", source))?;
            Ok(kept.as_struct().clone())
        })
        .collect()
}

/// Whether any row of `actions` (adds or removes) is present with `dataChange` true.
fn has_data_change(actions: &StructArray) -> bool {
    (0..actions.len()).any(|row| actions.is_valid(row) && data_change(actions, row))
}

fn data_change(actions: &StructArray, row: usize) -> bool {
    actions
        .column_by_name(add::DATA_CHANGE)
        .and_then(|column| column.as_boolean_opt())
        .is_none_or(|flags| flags.is_null(row) || flags.value(row))
}

/// Refuses a `metaData` action of `version` whose schema or partition columns differ from
/// those the stream reads with.
fn ensure_same_shape(
    storage: &Storage,
    config: &TableConfiguration,
    metadata: &Metadata,
    version: u64,
) -> Result<()> {
    let current = config.metadata();
    if current.schema_string == metadata.schema_string
        && current.partition_columns == metadata.partition_columns
    {
        return Ok(());
    }
    Err(Error::NotAllowed(format!(
        "version {version} of {} changes the table's schema or partition columns: a streaming \
         read cannot go on across it; restart the query",
        storage.uri()
    )))
}

/// The first version committed at or after `ms`.
async fn first_version_at_or_after(storage: &Storage, ms: i64) -> Result<u64> {
    let latest = crate::log::latest_version(storage).await?;
    let before = crate::log::version_at(storage, ms.saturating_sub(1))
        .await
        .ok();
    let candidate = before.map_or(0, |version| version + 1);
    if candidate > latest {
        return Err(Error::VersionNotFound {
            table: storage.uri().to_string(),
            version: candidate,
            reason: format!("no commit at or after timestamp {ms} ms (latest is {latest})"),
        });
    }
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::ops::{write_table, WriteMode, WriteTableOptions};
    use crate::storage::Storage;
    use crate::table::Table;

    async fn append(table: &Table, ids: &[i64], mode: WriteMode) {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(ids.to_vec()))],
        )
        .unwrap();
        let options = WriteTableOptions {
            mode,
            ..WriteTableOptions::default()
        };
        let stream = futures::stream::iter(vec![Ok(batch)]);
        write_table(table.storage(), schema, stream, options)
            .await
            .unwrap();
    }

    fn offset(version: u64, index: i64, snapshot: bool) -> StreamOffset {
        StreamOffset {
            version,
            index,
            snapshot,
        }
    }

    #[tokio::test]
    async fn offsets_walk_the_snapshot_then_each_commit_within_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        let table = Table::from_storage(storage);
        append(&table, &[1], WriteMode::Append).await;
        append(&table, &[2], WriteMode::Append).await;
        let start = StreamOffset::initial(table.storage(), StreamStart::LatestSnapshot)
            .await
            .unwrap();
        assert_eq!(start, offset(1, -1, true));
        let one_file = StreamOptions {
            max_files: Some(1),
            ..StreamOptions::default()
        };
        let first = stream_files(table.storage(), start, None, &one_file)
            .await
            .unwrap();
        assert_eq!((first.end, first.num_files), (offset(1, 0, true), 1));
        let second = stream_files(table.storage(), first.end, None, &one_file)
            .await
            .unwrap();
        assert_eq!(second.end, offset(1, 1, true));
        let idle = stream_files(table.storage(), second.end, None, &one_file)
            .await
            .unwrap();
        assert_eq!((idle.end, idle.num_files), (second.end, 0));

        append(&table, &[3], WriteMode::Append).await;
        let all = StreamOptions::default();
        let third = stream_files(table.storage(), second.end, None, &all)
            .await
            .unwrap();
        assert_eq!((third.end, third.num_files), (offset(2, 0, false), 1));
        let replay = stream_files(table.storage(), start, Some(third.end), &one_file)
            .await
            .unwrap();
        assert_eq!(replay.num_files, 3);

        append(&table, &[4], WriteMode::Overwrite).await;
        let refused = stream_files(table.storage(), third.end, None, &all)
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::NotAllowed(message) if message.contains("version 3")));
        let skip = StreamOptions {
            skip_change_commits: true,
            ..StreamOptions::default()
        };
        let skipped = stream_files(table.storage(), third.end, None, &skip)
            .await
            .unwrap();
        assert_eq!(skipped.num_files, 0);
        let from_v2 = StreamOffset::initial(table.storage(), StreamStart::Version(2))
            .await
            .unwrap();
        assert_eq!(from_v2, offset(2, -1, false));
        assert!(
            StreamOffset::initial(table.storage(), StreamStart::Version(9))
                .await
                .is_err()
        );
    }
}
