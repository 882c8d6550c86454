//! A write split across processes, as a distributed engine (Spark's Python data source) runs
//! one: the driver plans it once ([`DistributedWrite::plan`]), every task writes its rows to
//! data files following the plan ([`DistributedWrite::write_files`], whose files travel back
//! as Arrow rows of the file-list shape, [`file_list_batch`]), and the driver commits all of
//! them in one Delta transaction ([`DistributedWrite::commit`]).
//!
//! The plan is plain JSON (the write's options, the data's Arrow schema, and the protocol and
//! metadata the commit will leave the table with), so it can be pickled to tasks. Modes,
//! `replaceWhere`, schema merge and overwrite and application versions are decided by
//! `write_table`'s own preparation, run when planning and again when committing: the files
//! written follow the planned configuration, and the commit refuses them (a
//! [`ConflictKind::MetadataChanged`] conflict naming them) when the table's configuration
//! changed in between.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{MapBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Schema, SchemaRef};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::actions::{Metadata, Protocol};
use crate::error::{ConflictKind, Error, Result};
use crate::expr::parse_sql;
use crate::schema::match_name;
use crate::storage::Storage;
use crate::table_config::TableConfiguration;
use crate::transaction::{
    add_file, stage_identity_high_water_marks, AddFile, CommitResult, Transaction,
    DATA_WRITER_FEATURES,
};
use crate::write::changes::{cdc_rows, rows_match, write_with_insert_changes, CHANGE_DATA_DIR};
use crate::write::claims::IdentityClaims;
use crate::write::duties::{identity_high_water_marks, IDENTITY_HIGH_WATER_MARK_KEY};
use crate::write::{write_batches, WriteFailure, WriterOptions, WrittenFile};

use crate::ops::dml::replace_where::{inserts_need_changes, stage_replaced_rows};
use crate::ops::write::{
    prepare_write, replaced_predicate, SchemaMode, WriteMode, WriteTableOptions,
};

/// The options of a distributed write, in plain values (see [`WriteTableOptions`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DistributedWriteOptions {
    /// `append` or `overwrite` (also `error`, `ignore`).
    pub mode: String,
    pub partition_by: Option<Vec<String>>,
    /// The `replaceWhere` predicate, as SQL text over data and partition columns.
    pub predicate: Option<String>,
    /// Rows written need not match `predicate` (see [`WriteTableOptions`]).
    #[serde(default)]
    pub skip_predicate_check: bool,
    /// `merge` or `overwrite`.
    pub schema_mode: Option<String>,
    /// Table properties of a table the write creates.
    pub configuration: HashMap<String, String>,
    /// Clustering columns of a table the write creates (see [`WriteTableOptions`]).
    #[serde(default)]
    pub cluster_by: Option<Vec<String>>,
    pub target_file_size: Option<u64>,
    pub max_records_per_file: Option<u64>,
    /// `(app_id, version)` of the `txn` action the commit writes.
    pub app_version: Option<(String, i64)>,
    /// Extra `commitInfo` fields (such as `userMetadata`).
    pub commit_info: Map<String, Value>,
}

impl DistributedWriteOptions {
    /// The options as `write_table` takes them; an unknown mode or an unparsable predicate
    /// is an [`Error::InvalidArgument`].
    fn table_options(&self) -> Result<WriteTableOptions> {
        Ok(WriteTableOptions {
            mode: WriteMode::parse(&self.mode)?,
            partition_by: self.partition_by.clone(),
            predicate: self.predicate.as_deref().map(parse_sql).transpose()?,
            skip_predicate_check: self.skip_predicate_check,
            schema_mode: self
                .schema_mode
                .as_deref()
                .map(SchemaMode::parse)
                .transpose()?,
            configuration: self.configuration.clone(),
            cluster_by: self.cluster_by.clone(),
            writer: WriterOptions {
                target_file_size: self.target_file_size,
                max_records_per_file: self.max_records_per_file,
                ..WriterOptions::default()
            },
            app_version: self.app_version.clone(),
            commit_info: self.commit_info.clone(),
            ..WriteTableOptions::default()
        })
    }
}

/// A planned distributed write: what every task and the commit need, serializable as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DistributedWrite {
    options: DistributedWriteOptions,
    /// The Arrow schema of the data written.
    data_schema: Schema,
    /// The protocol and metadata the data files follow; `None` when the write commits
    /// nothing (mode `ignore` on an existing table, an application version already
    /// committed).
    target: Option<(Protocol, Metadata)>,
    /// True when the write replaces the rows of the existing table matching the predicate
    /// (`replaceWhere`): the rows written are checked against it.
    #[serde(default)]
    replaces_rows: bool,
    /// True when the tasks write their rows as `insert` change rows too (the delete half
    /// of the `replaceWhere` writes change data files).
    #[serde(default)]
    insert_changes: bool,
    /// The streaming micro-batch the commit is, when a streaming sink commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    micro_batch: Option<MicroBatch>,
    /// The key of the identity claims the tasks number new rows from, when the data lacks
    /// identity columns of the table (`crate::write::claims`); a streaming query's key is
    /// per micro-batch ([`DistributedWrite::for_micro_batch_task`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity_claims: Option<String>,
    /// The streaming micro-batch whose tasks the plan serves, which has claims of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claims_epoch: Option<i64>,
}

/// A streaming sink's micro-batch: committed with the `txn` action `{appId, version:
/// epochId}` (spec "Set Transaction Identifiers") and recorded as Delta on Spark records a
/// streaming sink's commit, operation `STREAMING UPDATE` with the parameters `outputMode`,
/// `queryId` and `epochId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MicroBatch {
    /// The `txn` application id: the query's id unless the sink was given another.
    pub app_id: String,
    /// The streaming query's id.
    pub query_id: String,
    /// The micro-batch id: the `txn` version.
    pub epoch_id: i64,
}

impl DistributedWrite {
    /// Plans writing data of `data_schema` to `table` with `options`: the decisions of
    /// `write_table` (table created when absent, modes, partition columns checked, schema
    /// merged or replaced, the table refused when it cannot be written by this library).
    /// When the data lacks identity columns of the table, the tasks take their values from
    /// identity claims in the table's store, which must have conditional puts. Nothing is
    /// written.
    pub async fn plan(
        storage: &Storage,
        data_schema: SchemaRef,
        options: DistributedWriteOptions,
    ) -> Result<DistributedWrite> {
        let table_options = options.table_options()?;
        let prepared = prepare_write(storage, &data_schema, &table_options).await?;
        let mut plan = DistributedWrite {
            options,
            data_schema: data_schema.as_ref().clone(),
            target: None,
            replaces_rows: false,
            insert_changes: false,
            micro_batch: None,
            identity_claims: None,
            claims_epoch: None,
        };
        let Some(transaction) = prepared else {
            return Ok(plan);
        };
        let config = transaction.transaction().configuration()?;
        if !generated_identity_columns(&config, &data_schema).is_empty() {
            plan.identity_claims = Some(claims_key(storage, &config)?);
        }
        if let Some(predicate) = replaced_predicate(&transaction, &table_options) {
            plan.replaces_rows = true;
            plan.insert_changes = inserts_need_changes(&config, &predicate);
        }
        plan.target = Some((config.protocol().clone(), config.metadata().clone()));
        Ok(plan)
    }

    /// The plan as JSON text.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|error| Error::internal_invariant(format!("encoding a write plan: {error}")))
    }

    /// The plan of [`DistributedWrite::to_json`]'s text.
    pub fn from_json(text: &str) -> Result<DistributedWrite> {
        serde_json::from_str(text)
            .map_err(|error| Error::InvalidArgument(format!("not a deltalog write plan: {error}")))
    }

    /// The plan committing `batch`, a streaming sink's micro-batch: nothing is committed
    /// when the table holds its application at its epoch or a later one. The commit is a
    /// `STREAMING UPDATE` in output mode `Complete` when the plan overwrites, else `Append`.
    pub fn for_micro_batch(mut self, batch: MicroBatch) -> DistributedWrite {
        self.options.app_version = Some((batch.app_id.clone(), batch.epoch_id));
        self = self.for_micro_batch_task(batch.epoch_id);
        self.micro_batch = Some(batch);
        self
    }

    /// The plan a task of the streaming micro-batch `epoch_id` follows: its identity claims
    /// are the micro-batch's own.
    pub fn for_micro_batch_task(mut self, epoch_id: i64) -> DistributedWrite {
        self.claims_epoch = Some(epoch_id);
        self
    }

    /// Deletes what the tasks of the write left besides data files (their identity claims),
    /// for a write given up before its commit. Data files are not deleted.
    pub async fn discard(&self, storage: &Storage) -> Result<()> {
        match self.claims(storage)? {
            Some(claims) => claims.remove().await,
            None => Ok(()),
        }
    }

    /// Whether the write commits nothing (its tasks write no file).
    pub fn is_noop(&self) -> bool {
        self.target.is_none()
    }

    /// The Arrow schema of the data the plan was made for.
    pub fn data_schema(&self) -> SchemaRef {
        Arc::new(self.data_schema.clone())
    }

    /// Writes the rows of `batches` to new data files of `table` following the plan and
    /// returns their add actions (nothing for a no-op plan). Rows are checked as
    /// `write_table` checks them (schema, constraints, the `replaceWhere` predicate). When
    /// the plan writes the rows as `insert` change rows too, the change data files come
    /// among the adds, under `_change_data/` with `data_change` false, and the commit
    /// stages them as `cdc` actions. On failure the [`WriteFailure`] names the files
    /// completed, which nothing references.
    pub async fn write_files<S>(
        &self,
        storage: &Storage,
        batches: S,
    ) -> Result<Vec<AddFile>, WriteFailure>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let Some(config) = self
            .configuration(storage)
            .map_err(WriteFailure::unwritten)?
        else {
            return Ok(Vec::new());
        };
        let mut options = self
            .options
            .table_options()
            .map_err(WriteFailure::unwritten)?;
        options.writer.identity_claims = self.claims_key();
        let replaced = options.predicate.clone().filter(|_| self.replaces_rows);
        let check = replaced
            .filter(|_| !options.skip_predicate_check)
            .map(|predicate| {
                let uri = storage.uri().to_string();
                move |batch: &RecordBatch| rows_match(&predicate, batch, &uri)
            });
        let batches = batches.map(move |batch| {
            let batch = batch?;
            if let Some(check) = &check {
                check(&batch)?;
            }
            Ok(batch)
        });
        let storage = storage.clone();
        if !self.insert_changes {
            let result = write_batches(&config, storage, options.writer, batches).await?;
            return Ok(result.files.iter().map(add_file).collect());
        }
        let (result, changes) =
            write_with_insert_changes(&config, storage, options.writer, batches).await?;
        let mut adds: Vec<AddFile> = result.files.iter().map(add_file).collect();
        adds.extend(changes.iter().map(|file| AddFile {
            data_change: false,
            ..add_file(file)
        }));
        Ok(adds)
    }

    /// Commits `adds` (the files every task wrote) in one transaction made as
    /// `write_table` makes it at commit time: the overwrite's removes and the `replaceWhere`
    /// read recorded, the metadata changes staged, the `txn` of the application version
    /// set, and conflicts checked against concurrent commits. When the application version
    /// was committed meanwhile nothing is committed (`committed` false) and the files stay
    /// unreferenced. Errors name the data files left unreferenced.
    pub async fn commit(
        &self,
        storage: &Storage,
        adds: Vec<AddFile>,
    ) -> Result<CommitResult, WriteFailure> {
        let outcome = self.commit_files(storage, adds).await;
        // The claims served their purpose either way; left behind they only take space.
        let _ = self.discard(storage).await;
        outcome
    }

    async fn commit_files(
        &self,
        storage: &Storage,
        adds: Vec<AddFile>,
    ) -> Result<CommitResult, WriteFailure> {
        let paths: Vec<String> = adds.iter().map(|add| add.path.clone()).collect();
        let failure = |error: Error| WriteFailure {
            error,
            written_files: paths.clone(),
        };
        let options = self.options.table_options().map_err(failure)?;
        let prepared = prepare_write(storage, &self.data_schema(), &options)
            .await
            .map_err(failure)?;
        let Some(mut transaction) = prepared.filter(|_| self.target.is_some()) else {
            let version = crate::log::latest_version(storage).await.map_err(failure)?;
            return Ok(CommitResult::unchanged(version, None));
        };
        let config = transaction.transaction().configuration().map_err(failure)?;
        let read_version = transaction.transaction().read_version().unwrap_or(0);
        self.ensure_same_target(storage, &config, read_version)
            .map_err(failure)?;
        if let Some(predicate) = replaced_predicate(&transaction, &options) {
            let staged = stage_replaced_rows(transaction, &predicate, &options.writer).await;
            let (staged, replaced) = staged.map_err(|mut error| {
                error.written_files.extend(paths.iter().cloned());
                error
            })?;
            transaction = staged.with_written(paths.clone());
            transaction.add_metrics(&replaced.metrics);
        }
        let (changes, mut data): (Vec<AddFile>, Vec<AddFile>) =
            adds.into_iter().partition(is_change_file);
        // The file list the tasks ship has no tags: give the data files theirs here.
        let tags = config.new_file_tags();
        for add in data.iter_mut().filter(|add| add.tags.is_empty()) {
            add.tags = tags.clone();
        }
        let marks = self
            .claimed_high_water_marks(storage, &config, read_version)
            .await
            .map_err(failure)?;
        let staging = transaction.transaction_mut();
        staging.add(&data).map_err(failure)?;
        staging.add_data_writer_features(&DATA_WRITER_FEATURES);
        stage_identity_high_water_marks(staging, &config, &marks).map_err(failure)?;
        if !changes.is_empty() {
            let written: Vec<WrittenFile> = changes.iter().map(written_file).collect();
            let rows = cdc_rows(&written).map_err(failure)?;
            staging.add_cdc_files(rows).map_err(failure)?;
            let count = [("numAddedChangeFiles".to_string(), changes.len() as u64)];
            transaction.add_metrics(&count.into_iter().collect());
        }
        if let Some(batch) = &self.micro_batch {
            self.record_streaming_update(transaction.transaction_mut(), batch);
        }
        let mut commit = transaction.commit().await.map_err(|mut error| {
            error.written_files = paths.clone();
            error
        })?;
        let rows: u64 = data.iter().filter_map(record_count).sum();
        let bytes: u64 = data.iter().map(|add| add.size.max(0) as u64).sum();
        commit.metrics.insert("numOutputRows".into(), rows);
        commit.metrics.insert("numOutputBytes".into(), bytes);
        Ok(commit)
    }

    /// Names the commit as Delta on Spark's streaming sink names its commits
    /// (`DeltaOperations.StreamingUpdate`: parameter values are strings).
    fn record_streaming_update(&self, transaction: &mut Transaction, batch: &MicroBatch) {
        let overwrites = WriteMode::parse(&self.options.mode).ok() == Some(WriteMode::Overwrite);
        let output_mode = if overwrites { "Complete" } else { "Append" };
        transaction.set_operation("STREAMING UPDATE");
        transaction.clear_operation_parameters();
        transaction.set_operation_parameter("outputMode", output_mode);
        transaction.set_operation_parameter("queryId", batch.query_id.as_str());
        transaction.set_operation_parameter("epochId", batch.epoch_id.to_string());
    }

    /// The planned configuration, validated, and the table writable with it.
    fn configuration(&self, storage: &Storage) -> Result<Option<TableConfiguration>> {
        let Some((protocol, metadata)) = &self.target else {
            return Ok(None);
        };
        let config =
            TableConfiguration::try_new(protocol.clone(), metadata.clone(), storage.uri())?;
        config.ensure_writable(true, &DATA_WRITER_FEATURES)?;
        Ok(Some(config))
    }

    /// The key of the tasks' identity claims, when they number rows.
    fn claims_key(&self) -> Option<String> {
        let key = self.identity_claims.as_deref()?;
        Some(match self.claims_epoch {
            Some(epoch) => format!("{key}_{epoch}"),
            None => key.to_string(),
        })
    }

    /// The identity claims of the tasks, when they number rows.
    fn claims(&self, storage: &Storage) -> Result<Option<IdentityClaims>> {
        self.claims_key()
            .map(|key| IdentityClaims::new(storage.clone(), &key))
            .transpose()
    }

    /// The new high-water marks of the identity columns the tasks numbered: the values of the
    /// last position claimed. The marks the claims counted from must still be the table's,
    /// else a concurrent commit numbered rows from them too (a
    /// [`ConflictKind::MetadataChanged`] conflict).
    async fn claimed_high_water_marks(
        &self,
        storage: &Storage,
        config: &TableConfiguration,
        version: u64,
    ) -> Result<Vec<(String, i64)>> {
        let Some(claims) = self.claims(storage)? else {
            return Ok(Vec::new());
        };
        let generated = generated_identity_columns(config, &self.data_schema);
        let marks = claims
            .new_high_water_marks(config.schema(), &generated, version)
            .await?;
        Ok(marks.unwrap_or_default())
    }

    /// Refuses a commit whose configuration differs from the planned one in what data files
    /// depend on: protocol, schema (identity high-water marks aside: the claims check those),
    /// partition columns, table properties.
    fn ensure_same_target(
        &self,
        storage: &Storage,
        config: &TableConfiguration,
        version: u64,
    ) -> Result<()> {
        let Some((protocol, metadata)) = &self.target else {
            return Ok(());
        };
        let current = config.metadata();
        let same = config.protocol() == protocol
            && without_high_water_marks(&current.schema_string)
                == without_high_water_marks(&metadata.schema_string)
            && current.partition_columns == metadata.partition_columns
            && current.configuration == metadata.configuration;
        if same {
            return Ok(());
        }
        Err(Error::CommitConflict {
            kind: ConflictKind::MetadataChanged,
            version,
            table: storage.uri().to_string(),
            reason: "the table's protocol, schema, partitioning or properties changed while the \
                     write's tasks ran; its data files follow the configuration it was planned \
                     with"
                .into(),
        })
    }
}

/// The rows of `adds` in the file-list shape `adds_from_file_list` reads: `path`, `size`,
/// `modification_time`, `partition_values` (a map of physical column name to value text),
/// `stats`, `data_change`.
pub fn file_list_batch(adds: &[AddFile]) -> Result<RecordBatch> {
    let paths: StringArray = adds.iter().map(|add| Some(add.path.as_str())).collect();
    let sizes: Int64Array = adds.iter().map(|add| Some(add.size)).collect();
    let times: Int64Array = adds.iter().map(|add| Some(add.modification_time)).collect();
    let stats: StringArray = adds.iter().map(|add| add.stats.as_deref()).collect();
    let changes: BooleanArray = adds.iter().map(|add| Some(add.data_change)).collect();
    let mut partitions = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for add in adds {
        for (name, value) in &add.partition_values {
            partitions.keys().append_value(name);
            partitions.values().append_option(value.as_deref());
        }
        partitions
            .append(true)
            .map_err(|source| Error::arrow("building the file list", source))?;
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("path", Arc::new(paths)),
        ("size", Arc::new(sizes)),
        ("modification_time", Arc::new(times)),
        ("partition_values", Arc::new(partitions.finish())),
        ("stats", Arc::new(stats)),
        ("data_change", Arc::new(changes)),
    ];
    RecordBatch::try_from_iter(columns)
        .map_err(|source| Error::arrow("building the file list", source))
}

/// The identity columns of the table whose values a write of `data` rows generates: those
/// the data lacks (matched by name as the writer matches them).
pub(crate) fn generated_identity_columns(
    config: &TableConfiguration,
    data: &Schema,
) -> Vec<String> {
    let names: Vec<&str> = data.fields().iter().map(|f| f.name().as_str()).collect();
    identity_high_water_marks(config.schema())
        .into_keys()
        .filter(|column| match_name(&names, column).is_none())
        .collect()
}

/// A fresh key for the identity claims of one write. The tasks race for claims, which only
/// a store with conditional puts settles ([`Error::NotAllowed`] without them).
pub(crate) fn claims_key(storage: &Storage, config: &TableConfiguration) -> Result<String> {
    if !storage.has_conditional_put() {
        return Err(Error::NotAllowed(format!(
            "{}: the data lacks identity columns of the table (table feature \
             identityColumns), and the tasks of a distributed write number their rows \
             through claims that need a store with conditional puts; write with \
             deltalog.write_table, or give the identity values",
            config.table_uri()
        )));
    }
    Ok(uuid::Uuid::new_v4().simple().to_string())
}

/// `schema_string` with every `delta.identity.highWaterMark` taken out of the field
/// metadata, for comparing schemas whatever values were generated since.
fn without_high_water_marks(schema_string: &Option<String>) -> Option<Value> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove(IDENTITY_HIGH_WATER_MARK_KEY);
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value: Value = serde_json::from_str(schema_string.as_deref()?).ok()?;
    strip(&mut value);
    Some(value)
}

/// True for a change data file a task wrote (under `_change_data/`, where no data file goes).
fn is_change_file(add: &AddFile) -> bool {
    add.path.starts_with(&format!("{CHANGE_DATA_DIR}/"))
}

/// The facts of a change data file a task shipped as an add.
fn written_file(add: &AddFile) -> WrittenFile {
    WrittenFile {
        path: add.path.clone(),
        size: u64::try_from(add.size).unwrap_or(0),
        partition_values: add.partition_values.clone(),
        stats: add.stats.clone().unwrap_or_default(),
        num_records: record_count(add).unwrap_or(0),
        modification_time: add.modification_time,
        tags: add.tags.clone(),
    }
}

fn record_count(add: &AddFile) -> Option<u64> {
    let stats: Value = serde_json::from_str(add.stats.as_deref()?).ok()?;
    stats.get("numRecords")?.as_u64()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field};

    use super::*;
    use crate::ops::files::adds_from_file_list;
    use crate::ops::write::write_table;
    use crate::snapshot::SnapshotAt;
    use crate::storage::Storage;
    use crate::table::Table;
    use crate::transaction::conflict::IDENTITY_SCHEMA_UPDATE_TAG;

    fn batch(ids: &[i64], parts: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("p", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(parts.to_vec())),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn local_table(dir: &tempfile::TempDir) -> Table {
        let storage = Storage::open(dir.path().to_str().unwrap(), &HashMap::new()).unwrap();
        Table::from_storage(storage)
    }

    /// What a task does: writes its batch and ships the files as a file-list batch.
    async fn task(plan: &str, table: &Table, data: RecordBatch) -> Vec<AddFile> {
        let plan = DistributedWrite::from_json(plan).unwrap();
        let stream = futures::stream::iter(vec![Ok(data)]);
        let adds = plan.write_files(table.storage(), stream).await.unwrap();
        adds_from_file_list(&file_list_batch(&adds).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn tasks_write_and_one_commit_creates_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let table = local_table(&dir);
        let options = DistributedWriteOptions {
            mode: "append".into(),
            partition_by: Some(vec!["p".into()]),
            app_version: Some(("job".into(), 3)),
            ..DistributedWriteOptions::default()
        };
        let schema = batch(&[], &[]).schema();
        let plan = DistributedWrite::plan(table.storage(), schema.clone(), options.clone())
            .await
            .unwrap();
        assert!(!crate::log::has_log_files(table.storage()).await.unwrap());
        let text = plan.to_json().unwrap();
        let mut adds = task(&text, &table, batch(&[1, 2], &["a", "b"])).await;
        adds.extend(task(&text, &table, batch(&[3], &["a"])).await);
        assert_eq!(adds.len(), 3);
        let commit = plan.commit(table.storage(), adds).await.unwrap();
        assert_eq!((commit.version, commit.metrics["numOutputRows"]), (0, 3));
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        assert_eq!(snapshot.num_files().await.unwrap(), 3);
        assert_eq!(snapshot.partition_columns(), ["p"]);

        let again = DistributedWrite::plan(table.storage(), schema, options)
            .await
            .unwrap();
        assert!(again.is_noop());
        let replay = plan.commit(table.storage(), Vec::new()).await.unwrap();
        assert!(!replay.committed);
    }

    #[tokio::test]
    async fn a_micro_batch_commits_once_as_a_streaming_update() {
        let dir = tempfile::tempdir().unwrap();
        let table = local_table(&dir);
        let data = batch(&[1], &["a"]);
        let append = DistributedWriteOptions {
            mode: "append".into(),
            ..DistributedWriteOptions::default()
        };
        let plan = DistributedWrite::plan(table.storage(), data.schema(), append)
            .await
            .unwrap();
        let adds = task(&plan.to_json().unwrap(), &table, data).await;
        let micro_batch = MicroBatch {
            app_id: "app".into(),
            query_id: "query".into(),
            epoch_id: 4,
        };
        let plan = DistributedWrite::from_json(&plan.to_json().unwrap())
            .unwrap()
            .for_micro_batch(micro_batch);
        let plan = DistributedWrite::from_json(&plan.to_json().unwrap()).unwrap();
        assert!(
            plan.commit(table.storage(), adds.clone())
                .await
                .unwrap()
                .committed
        );
        assert!(!plan.commit(table.storage(), adds).await.unwrap().committed);

        let log = dir.path().join("_delta_log/00000000000000000000.json");
        let text = std::fs::read_to_string(log).unwrap();
        let info: Value = text
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find_map(|action| action.get("commitInfo").cloned())
            .unwrap();
        assert_eq!(info["operation"], "STREAMING UPDATE");
        let parameters =
            serde_json::json!({"outputMode": "Append", "queryId": "query", "epochId": "4"});
        assert_eq!(info["operationParameters"], parameters);
        assert!(text.contains(r#"{"txn":{"appId":"app","version":4"#));
    }

    #[tokio::test]
    async fn a_schema_change_between_plan_and_commit_is_a_conflict_naming_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let table = local_table(&dir);
        let data = batch(&[1], &["a"]);
        let stream = futures::stream::iter(vec![Ok(data.clone())]);
        write_table(table.storage(), data.schema(), stream, Default::default())
            .await
            .unwrap();
        let append = DistributedWriteOptions {
            mode: "append".into(),
            ..DistributedWriteOptions::default()
        };
        let plan = DistributedWrite::plan(table.storage(), data.schema(), append)
            .await
            .unwrap();
        let adds = task(&plan.to_json().unwrap(), &table, batch(&[2], &["b"])).await;

        let wider = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("p", DataType::Utf8, true),
            Field::new("extra", DataType::Utf8, true),
        ]));
        let merge = WriteTableOptions {
            schema_mode: Some(SchemaMode::Merge),
            ..WriteTableOptions::default()
        };
        let empty = futures::stream::iter(Vec::new());
        write_table(table.storage(), wider, empty, merge)
            .await
            .unwrap();

        let refused = plan
            .commit(table.storage(), adds.clone())
            .await
            .unwrap_err();
        assert!(matches!(
            refused.error,
            Error::CommitConflict {
                kind: ConflictKind::MetadataChanged,
                ..
            }
        ));
        assert_eq!(refused.written_files, vec![adds[0].path.clone()]);
        assert_eq!(table.latest_version().await.unwrap(), 1);
    }

    /// A table whose `id` is `GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5)`.
    async fn identity_table(dir: &tempfile::TempDir) -> Table {
        let table = local_table(dir);
        let schema = crate::schema::parse_schema(
            r#"{"type":"struct","fields":[
            {"name":"id","type":"long","nullable":true,"metadata":{
              "delta.identity.start":10,"delta.identity.step":5,
              "delta.identity.allowExplicitInsert":false}},
            {"name":"v","type":"string","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let create = crate::ops::create::CreateTable {
            schema,
            ..Default::default()
        };
        crate::ops::create::create_table(table.storage(), create, Default::default())
            .await
            .unwrap();
        table
    }

    fn values(rows: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, true)]));
        let column: ArrayRef = Arc::new(StringArray::from(rows.to_vec()));
        RecordBatch::try_new(schema, vec![column]).unwrap()
    }

    async fn identity_values(table: &Table) -> Vec<i64> {
        crate::ops::dml::test_tables::ids(table).await
    }

    fn commit_info(dir: &tempfile::TempDir, version: u64) -> Value {
        let name = format!("_delta_log/{version:020}.json");
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        first["commitInfo"].clone()
    }

    #[tokio::test]
    async fn tasks_number_identity_values_from_shared_claims() {
        let dir = tempfile::tempdir().unwrap();
        let table = identity_table(&dir).await;
        let options = DistributedWriteOptions {
            mode: "append".into(),
            ..DistributedWriteOptions::default()
        };
        let plan = DistributedWrite::plan(table.storage(), values(&[]).schema(), options.clone())
            .await
            .unwrap();
        let text = plan.to_json().unwrap();
        let mut adds = task(&text, &table, values(&["a", "b"])).await;
        adds.extend(task(&text, &table, values(&["c"])).await);
        let claims = dir.path().join("_delta_log/_identity");
        assert_eq!(std::fs::read_dir(&claims).unwrap().count(), 1);
        let commit = plan.commit(table.storage(), adds).await.unwrap();
        assert_eq!(commit.version, 1);
        // Each task claimed what its batch needed: positions 0 and 1, then 2.
        assert_eq!(identity_values(&table).await, vec![10, 15, 20]);
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let marks = identity_high_water_marks(snapshot.schema());
        assert_eq!(marks["id"], Some(20));
        let info = commit_info(&dir, 1);
        assert_eq!(info["tags"][IDENTITY_SCHEMA_UPDATE_TAG], "true");
        assert_eq!(
            std::fs::read_dir(&claims).unwrap().count(),
            0,
            "claims removed"
        );

        // The next write numbers after the high-water mark.
        let plan = DistributedWrite::plan(table.storage(), values(&[]).schema(), options)
            .await
            .unwrap();
        let adds = task(&plan.to_json().unwrap(), &table, values(&["d"])).await;
        plan.commit(table.storage(), adds).await.unwrap();
        assert_eq!(identity_values(&table).await, vec![10, 15, 20, 25]);
    }

    #[tokio::test]
    async fn a_concurrent_identity_write_makes_the_commit_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let table = identity_table(&dir).await;
        let options = DistributedWriteOptions {
            mode: "append".into(),
            ..DistributedWriteOptions::default()
        };
        let schema = values(&[]).schema();
        let first = DistributedWrite::plan(table.storage(), schema.clone(), options.clone())
            .await
            .unwrap();
        let second = DistributedWrite::plan(table.storage(), schema, options)
            .await
            .unwrap();
        let first_adds = task(&first.to_json().unwrap(), &table, values(&["a"])).await;
        let second_adds = task(&second.to_json().unwrap(), &table, values(&["b"])).await;
        first.commit(table.storage(), first_adds).await.unwrap();
        let refused = second
            .commit(table.storage(), second_adds)
            .await
            .unwrap_err();
        assert!(
            matches!(
                refused.error,
                Error::CommitConflict {
                    kind: ConflictKind::MetadataChanged,
                    ..
                }
            ),
            "{}",
            refused.error
        );
        assert_eq!(identity_values(&table).await, vec![10]);
    }

    #[tokio::test]
    async fn a_change_without_metadata_does_not_conflict_with_an_identity_only_update() {
        let dir = tempfile::tempdir().unwrap();
        let table = identity_table(&dir).await;
        let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
        let mut change = snapshot.transaction("WRITE");
        let options = DistributedWriteOptions {
            mode: "append".into(),
            ..DistributedWriteOptions::default()
        };
        let plan = DistributedWrite::plan(table.storage(), values(&[]).schema(), options)
            .await
            .unwrap();
        let adds = task(&plan.to_json().unwrap(), &table, values(&["a"])).await;
        plan.commit(table.storage(), adds).await.unwrap();
        // A blind append staged on the older version commits on top of the new marks.
        change.add(&[]).unwrap();
        let done = change.commit().await.unwrap();
        assert_eq!(done.version, 2);
    }
}
