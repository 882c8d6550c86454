//! A Delta table: where it is, its versions, and snapshots of them (spec "Delta Log Entries",
//! "Last Checkpoint File", "Checkpoints"; catalogue A, G).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use futures::{StreamExt, TryStreamExt};

use crate::actions::CommitInfo;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::log::commit_range::CommitRange;
use crate::log::decode::commit::action_lines;
use crate::log::path::LogPath;
use crate::log::segment::LogSegment;
use crate::snapshot::Snapshot;
pub(crate) use crate::snapshot::SnapshotAt;
use crate::storage::Storage;

/// A Delta table at a location. Cheap to clone; holds no snapshot state.
#[derive(Clone, Debug)]
pub struct Table {
    storage: Storage,
    name: Arc<str>,
}

impl Table {
    /// Opens the table at `uri` (see [`Storage::open`] for the forms accepted).
    ///
    /// Fails with [`Error::TableNotFound`] unless `_delta_log` holds at least one log file.
    pub async fn open(uri: &str, storage_options: &HashMap<String, String>) -> Result<Table> {
        let storage = Storage::open(uri, storage_options)?;
        let table = Table::from_storage(storage);
        if !crate::log::has_log_files(&table.storage).await? {
            return Err(Error::TableNotFound {
                location: table.name.to_string(),
                reason: "it has no _delta_log folder, or no commit or checkpoint in it".into(),
            });
        }
        Ok(table)
    }

    /// A table on an already configured store.
    pub fn from_storage(storage: Storage) -> Table {
        let name = Arc::from(storage.root_url().as_str());
        Table { storage, name }
    }

    /// The table root as a URL ending in `/`.
    pub fn uri(&self) -> &str {
        &self.name
    }

    /// The store access of this table.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The newest version: the highest commit (or complete checkpoint) in the log.
    pub async fn latest_version(&self) -> Result<u64> {
        crate::log::latest_version(&self.storage).await
    }

    /// Loads the snapshot of the version `at` names.
    pub async fn snapshot(&self, at: SnapshotAt) -> Result<Snapshot> {
        Snapshot::load(&self.storage, at).await
    }

    /// The snapshot of the version `at` names, holding only the live files that may hold rows
    /// matching `filter` by their statistics and partition values: file skipping pushed into
    /// replay. Checkpoint row groups whose `stats_parsed` bounds rule the filter out are never
    /// decoded, so a selective filter costs a fraction of a full load. Everything else (schema,
    /// protocol, metadata, transactions) is that of the full snapshot; its file list and scans
    /// see only the matching files.
    pub async fn snapshot_matching(&self, at: SnapshotAt, filter: &Expr) -> Result<Snapshot> {
        Snapshot::load_matching(&self.storage, at, filter).await
    }

    /// The files that make up version `target` (`None`: the latest); see
    /// `crate::log::locate_segment`.
    pub async fn log_segment(&self, target: Option<u64>) -> Result<LogSegment> {
        crate::log::locate_segment(&self.storage, target).await
    }

    /// The newest version committed at or before `timestamp_ms`.
    pub async fn version_at(&self, timestamp_ms: i64) -> Result<u64> {
        crate::log::version_at(&self.storage, timestamp_ms).await
    }

    /// Commit information, newest first: one row per version still in the log (up to `limit`).
    /// Timestamps follow `crate::log::timestamps`, as time travel does.
    pub async fn history(&self, limit: Option<usize>) -> Result<RecordBatch> {
        let listing = self.list_from(0).await?;
        let range = CommitRange::all_listed(&listing).newest(limit.unwrap_or(usize::MAX));
        let mut rows = range
            .stream(&self.storage)
            .map(|file| {
                let file = file?;
                let info = file.commit_info()?;
                Ok((file.version, file.timestamp_ms(info.as_ref()), info))
            })
            .try_collect::<Vec<_>>()
            .await?;
        rows.reverse();
        history_batch(&rows)
    }

    /// The actions of the commits `start..=end` (`end` `None`: the latest), one batch per
    /// commit with columns `version`, `action` (the action name) and `json` (the action object
    /// as written).
    pub async fn commits(&self, start: u64, end: Option<u64>) -> Result<Vec<RecordBatch>> {
        if let Some(end) = end.filter(|end| start > *end) {
            return Err(Error::VersionNotFound {
                table: self.name.to_string(),
                version: start,
                reason: format!("the requested range {start}..={end} is empty"),
            });
        }
        let range = CommitRange::list(&self.storage, start, end).await?;
        range
            .stream(&self.storage)
            .map(|file| {
                let file = file?;
                actions_batch(&file.name, file.version, &file.bytes)
            })
            .try_collect()
            .await
    }

    /// Every log file of version `start` or later.
    pub async fn list_from(&self, start: u64) -> Result<Vec<LogPath>> {
        crate::log::list_log_from(&self.storage, start).await
    }
}

/// The history rows: version, commit timestamp and `commitInfo` of each commit.
fn history_batch(rows: &[(u64, i64, Option<CommitInfo>)]) -> Result<RecordBatch> {
    let text = |f: &dyn Fn(&CommitInfo) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter()
                .map(|(_, _, info)| info.as_ref().and_then(f))
                .collect::<Vec<_>>(),
        ))
    };
    let field_text = |name: &'static str| {
        move |info: &CommitInfo| {
            info.raw
                .get(name)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        }
    };
    let utc = Some(Arc::from("UTC"));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|(version, _, _)| *version as i64),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(rows.iter().map(|(_, time, _)| *time))
                .with_timezone_opt(utc.clone()),
        ),
        Arc::new(
            TimestampMillisecondArray::from(
                rows.iter()
                    .map(|(_, _, i)| i.as_ref().and_then(CommitInfo::in_commit_timestamp))
                    .collect::<Vec<_>>(),
            )
            .with_timezone_opt(utc.clone()),
        ),
        text(&|i| i.operation().map(str::to_string)),
        text(&|i| i.raw.get("operationParameters").map(|v| v.to_string())),
        text(&field_text("userName")),
        text(&field_text("engineInfo")),
        text(&|i| serde_json::to_string(&i.raw).ok()),
    ];
    let timestamp = DataType::Timestamp(TimeUnit::Millisecond, utc);
    let schema = Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("timestamp", timestamp.clone(), false),
        Field::new("in_commit_timestamp", timestamp, true),
        Field::new("operation", DataType::Utf8, true),
        Field::new("operation_parameters", DataType::Utf8, true),
        Field::new("user_name", DataType::Utf8, true),
        Field::new("engine_info", DataType::Utf8, true),
        Field::new("commit_info", DataType::Utf8, true),
    ]);
    RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|error| Error::arrow("building the history", error))
}

fn actions_batch(file: &str, version: u64, bytes: &[u8]) -> Result<RecordBatch> {
    let mut names = Vec::new();
    let mut texts = Vec::new();
    for (index, line) in action_lines(bytes, file) {
        let line = line?;
        let object: HashMap<String, serde_json::Value> = serde_json::from_slice(line.json)
            .map_err(|error| Error::corrupt(file, format!("line {}: {error}", index + 1)))?;
        let value = object.get(line.name).cloned().unwrap_or_default();
        names.push(line.name.to_string());
        texts.push(value.to_string());
    }
    let schema = Schema::new(vec![
        Field::new("version", DataType::Int64, false),
        Field::new("action", DataType::Utf8, false),
        Field::new("json", DataType::Utf8, false),
    ]);
    let rows = names.len();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![version as i64; rows])),
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(texts)),
        ],
    )
    .map_err(|error| Error::arrow(file, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: T) {}

    /// The futures of the public API can be spawned on a multi-threaded runtime.
    #[allow(dead_code)]
    fn futures_are_send(table: Table, snapshot: Snapshot) {
        assert_send(table.snapshot(SnapshotAt::Latest));
        assert_send(table.history(None));
        assert_send(table.commits(0, None));
        assert_send(snapshot.refresh());
        assert_send(snapshot.files(true));
    }
}
