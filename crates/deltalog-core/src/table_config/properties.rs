//! The `delta.*` table properties of `metaData.configuration` (spec "Table Properties" and the
//! feature sections that name them; Delta on Spark's `DeltaConfigs` for the rest): every key
//! this library reads or writes, and [`TableProperties`], the configuration parsed once into
//! typed values with the protocol's defaults.
//!
//! Parsing is lenient: a value that does not parse leaves its field at the default and is
//! recorded in [`TableProperties::invalid`], so a bad value of a property nobody uses never
//! stops a table from loading. The one exception is `delta.columnMapping.mode`, which decides
//! how every column is read: [`TableProperties::try_from_configuration`] refuses an unknown
//! mode. Code that needs a valid value asks [`TableProperties::check`] for the key's error
//! (the statistics code does so for `delta.dataSkippingNumIndexedCols`).
//!
//! Column metadata keys (`delta.columnMapping.id`, `delta.columnMapping.physicalName`,
//! `delta.typeChanges`) are not table properties: they live with the schema
//! ([`crate::schema`]).

use std::collections::HashMap;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::schema::ColumnMappingMode;

/// `delta.appendOnly`: the table only takes appends (spec "Append-only Tables").
pub(crate) const APPEND_ONLY: &str = "delta.appendOnly";
/// `delta.checkpointInterval`: commits between two checkpoints.
pub(crate) const CHECKPOINT_INTERVAL: &str = "delta.checkpointInterval";
/// `delta.checkpointPolicy`: `classic` or `v2` checkpoints (spec "V2 Checkpoint Table
/// Feature").
pub(crate) const CHECKPOINT_POLICY: &str = "delta.checkpointPolicy";
/// `delta.checkpointRetentionDuration`: how long checkpoints are kept by log cleanup.
pub(crate) const CHECKPOINT_RETENTION_DURATION: &str = "delta.checkpointRetentionDuration";
/// `delta.checkpoint.writeStatsAsJson`: checkpoints carry `add.stats` (spec "Checkpoint
/// Schema").
pub(crate) const CHECKPOINT_WRITE_STATS_AS_JSON: &str = "delta.checkpoint.writeStatsAsJson";
/// `delta.checkpoint.writeStatsAsStruct`: checkpoints carry `add.stats_parsed` and
/// `add.partitionValues_parsed` (spec "Checkpoint Schema").
pub(crate) const CHECKPOINT_WRITE_STATS_AS_STRUCT: &str = "delta.checkpoint.writeStatsAsStruct";
/// `delta.columnMapping.mode`: `none`, `name` or `id` (spec "Column Mapping"; catalogue
/// E1-01).
pub(crate) const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";
/// `delta.columnMapping.maxColumnId`: the highest column id assigned so far (spec "Writer
/// Requirements for Column Mapping").
pub(crate) const COLUMN_MAPPING_MAX_COLUMN_ID: &str = "delta.columnMapping.maxColumnId";
/// `delta.dataSkippingNumIndexedCols`: how many leaf columns (in schema order) get statistics.
pub(crate) const DATA_SKIPPING_NUM_INDEXED_COLS: &str = "delta.dataSkippingNumIndexedCols";
/// `delta.dataSkippingStatsColumns`: the columns that get statistics, by name (overrides the
/// count).
pub(crate) const DATA_SKIPPING_STATS_COLUMNS: &str = "delta.dataSkippingStatsColumns";
/// `delta.deletedFileRetentionDuration`: how long removed files stay for readers of older
/// versions before vacuum may delete them.
pub(crate) const DELETED_FILE_RETENTION_DURATION: &str = "delta.deletedFileRetentionDuration";
/// `delta.enableChangeDataFeed`: writers record row-level changes (spec "Change Data Files";
/// catalogue E3-01).
pub(crate) const ENABLE_CHANGE_DATA_FEED: &str = "delta.enableChangeDataFeed";
/// `delta.enableDeletionVectors`: writers may write deletion vectors (spec "Deletion
/// Vectors").
pub(crate) const ENABLE_DELETION_VECTORS: &str = "delta.enableDeletionVectors";
/// `delta.enableExpiredLogCleanup`: checkpointing deletes log files older than the log
/// retention.
pub(crate) const ENABLE_EXPIRED_LOG_CLEANUP: &str = "delta.enableExpiredLogCleanup";
/// `delta.enableIcebergCompatV1` (spec "Iceberg Compatibility V1").
pub(crate) const ENABLE_ICEBERG_COMPAT_V1: &str = "delta.enableIcebergCompatV1";
/// `delta.enableIcebergCompatV2` (spec "Iceberg Compatibility V2").
pub(crate) const ENABLE_ICEBERG_COMPAT_V2: &str = "delta.enableIcebergCompatV2";
/// `delta.enableIcebergCompatV3`: Iceberg compatibility V3 (Delta on Spark's `IcebergCompatV3`).
pub(crate) const ENABLE_ICEBERG_COMPAT_V3: &str = "delta.enableIcebergCompatV3";
/// `delta.universalFormat.iceberg.atomicConversion.supported`: set by Delta on Spark when it
/// creates a table with Iceberg compatibility; stored only.
pub(crate) const ICEBERG_ATOMIC_CONVERSION_SUPPORTED: &str =
    "delta.universalFormat.iceberg.atomicConversion.supported";
/// `delta.enableMaterializePartitionColumnsFeature`: turns on the
/// `materializePartitionColumns` feature (partition values written into the data files).
pub(crate) const ENABLE_MATERIALIZE_PARTITION_COLUMNS: &str =
    "delta.enableMaterializePartitionColumnsFeature";
/// `delta.writePartitionColumnsToParquet`: partition values are also written into the data
/// files.
pub(crate) const WRITE_PARTITION_COLUMNS_TO_PARQUET: &str = "delta.writePartitionColumnsToParquet";
/// `delta.enableInCommitTimestamps`: commits record their timestamp in `commitInfo`.
pub(crate) const ENABLE_IN_COMMIT_TIMESTAMPS: &str = "delta.enableInCommitTimestamps";
/// `delta.enableRowTracking`: row ids and row commit versions are reliable (spec "Row
/// Tracking").
pub(crate) const ENABLE_ROW_TRACKING: &str = "delta.enableRowTracking";
/// `delta.enableTypeWidening`: column types may be widened.
pub(crate) const ENABLE_TYPE_WIDENING: &str = "delta.enableTypeWidening";
/// `delta.inCommitTimestampEnablementVersion`: the version from which commits carry
/// in-commit timestamps.
pub(crate) const IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION: &str =
    "delta.inCommitTimestampEnablementVersion";
/// `delta.inCommitTimestampEnablementTimestamp`: the in-commit timestamp of that version.
pub(crate) const IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP: &str =
    "delta.inCommitTimestampEnablementTimestamp";
/// `delta.isolationLevel`: the isolation level of writes.
pub(crate) const ISOLATION_LEVEL: &str = "delta.isolationLevel";
/// `delta.logRetentionDuration`: how long log files are kept by log cleanup.
pub(crate) const LOG_RETENTION_DURATION: &str = "delta.logRetentionDuration";
/// `delta.randomizeFilePrefixes`: data files go under random directory prefixes.
pub(crate) const RANDOMIZE_FILE_PREFIXES: &str = "delta.randomizeFilePrefixes";
/// `delta.randomPrefixLength`: the length of those prefixes.
pub(crate) const RANDOM_PREFIX_LENGTH: &str = "delta.randomPrefixLength";
/// `delta.requireCheckpointProtectionBeforeVersion`: with `checkpointProtection`, the version
/// before which log cleanup must keep checkpoints usable.
pub(crate) const REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION: &str =
    "delta.requireCheckpointProtectionBeforeVersion";
/// `delta.rowTracking.materializedRowIdColumnName`: the data file column holding materialised
/// row ids (spec "Row Tracking"; catalogue E4-08).
pub(crate) const ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME: &str =
    "delta.rowTracking.materializedRowIdColumnName";
/// `delta.rowTracking.materializedRowCommitVersionColumnName`: the data file column holding
/// materialised row commit versions (spec "Row Tracking"; catalogue E4-08).
pub(crate) const ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME: &str =
    "delta.rowTracking.materializedRowCommitVersionColumnName";
/// `delta.rowTrackingSuspended`: with `rowTracking` supported, new files get no row ids
/// (set while the feature is being dropped).
pub(crate) const ROW_TRACKING_SUSPENDED: &str = "delta.rowTrackingSuspended";
/// `delta.dropFeatureTruncateHistory.retentionDuration`: the log retention `DROP FEATURE ...
/// TRUNCATE HISTORY` cleans up with.
pub(crate) const DROP_FEATURE_TRUNCATE_HISTORY_RETENTION: &str =
    "delta.dropFeatureTruncateHistory.retentionDuration";
/// `delta.setTransactionRetentionDuration`: how long `txn` actions are kept.
pub(crate) const SET_TRANSACTION_RETENTION_DURATION: &str = "delta.setTransactionRetentionDuration";
/// `delta.targetFileSize`: the size in bytes writers aim at for data files.
pub(crate) const TARGET_FILE_SIZE: &str = "delta.targetFileSize";
/// `delta.minReaderVersion`: a table property Delta on Spark turns into the protocol's reader
/// version when a table is created or altered (never kept in the configuration).
pub(crate) const MIN_READER_VERSION: &str = "delta.minReaderVersion";
/// `delta.minWriterVersion`: as [`MIN_READER_VERSION`] for the writer version.
pub(crate) const MIN_WRITER_VERSION: &str = "delta.minWriterVersion";
/// Prefix of the `delta.feature.<name>` = `supported` properties that add a table feature to
/// the protocol when a table is created or altered (spec "Table Features").
pub(crate) const FEATURE_PREFIX: &str = "delta.feature.";

/// The `delta.*` keys Delta on Spark accepts that this library only stores (its `DeltaConfigs`
/// entries without a constant above).
const SPARK_ONLY_KEYS: &[&str] = &[
    "delta.autoOptimize",
    "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite",
    "delta.castIcebergTimeType",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.dataSkippingStringPrefixLength",
    "delta.enableChangeDataCapture",
    "delta.enableFullRetentionRollback",
    "delta.enableVariantShredding",
    "delta.ignoreIcebergBucketPartition",
    "delta.ignoreProtocolDefaults",
    "delta.parquet.format.version",
    "delta.sampleRetentionDuration",
    "delta.universalFormat.enabledFormats",
];

/// Every `delta.*` key with a constant in this module.
const KEYS: &[&str] = &[
    APPEND_ONLY,
    CHECKPOINT_INTERVAL,
    CHECKPOINT_POLICY,
    CHECKPOINT_RETENTION_DURATION,
    CHECKPOINT_WRITE_STATS_AS_JSON,
    CHECKPOINT_WRITE_STATS_AS_STRUCT,
    COLUMN_MAPPING_MODE,
    COLUMN_MAPPING_MAX_COLUMN_ID,
    DATA_SKIPPING_NUM_INDEXED_COLS,
    DATA_SKIPPING_STATS_COLUMNS,
    DELETED_FILE_RETENTION_DURATION,
    ENABLE_CHANGE_DATA_FEED,
    ENABLE_DELETION_VECTORS,
    ENABLE_EXPIRED_LOG_CLEANUP,
    ENABLE_ICEBERG_COMPAT_V1,
    ENABLE_ICEBERG_COMPAT_V2,
    ENABLE_ICEBERG_COMPAT_V3,
    ENABLE_IN_COMMIT_TIMESTAMPS,
    ENABLE_MATERIALIZE_PARTITION_COLUMNS,
    ICEBERG_ATOMIC_CONVERSION_SUPPORTED,
    WRITE_PARTITION_COLUMNS_TO_PARQUET,
    ENABLE_ROW_TRACKING,
    ENABLE_TYPE_WIDENING,
    IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION,
    IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP,
    ISOLATION_LEVEL,
    LOG_RETENTION_DURATION,
    RANDOMIZE_FILE_PREFIXES,
    RANDOM_PREFIX_LENGTH,
    REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION,
    ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME,
    ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME,
    ROW_TRACKING_SUSPENDED,
    DROP_FEATURE_TRUNCATE_HISTORY_RETENTION,
    SET_TRANSACTION_RETENTION_DURATION,
    TARGET_FILE_SIZE,
    MIN_READER_VERSION,
    MIN_WRITER_VERSION,
];

/// The spelling of a known `delta.*` key matching `key` without case (Delta on Spark stores
/// its own spelling of a key given in any case), `None` for a key neither this library nor
/// Delta on Spark knows. `delta.feature.*`, `delta.constraints.*` and
/// `delta.universalFormat.config.*` keys are outside this list.
pub(crate) fn known_key(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .chain(SPARK_ONLY_KEYS)
        .find(|known| known.eq_ignore_ascii_case(key))
        .copied()
}

/// Leaf columns with statistics when neither statistics property is set (Delta on Spark's
/// `dataSkippingNumIndexedCols` default).
pub(crate) const DEFAULT_NUM_INDEXED_COLS: usize = 32;

/// The table properties parsed from `metaData.configuration`, each with its default when the
/// key is absent or its value does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProperties {
    /// `delta.appendOnly`. Default `false` (spec "Append-only Tables": absent means not
    /// append-only).
    pub append_only: bool,
    /// `delta.checkpointInterval`, at least 1. Default 10 (Delta on Spark).
    pub checkpoint_interval: u64,
    /// `delta.checkpointPolicy`. Default `CheckpointPolicy::Classic` (Delta on Spark).
    pub checkpoint_policy: CheckpointPolicy,
    /// `delta.checkpointRetentionDuration`. Default 2 days (Delta on Spark).
    pub checkpoint_retention_duration: Duration,
    /// `delta.checkpoint.writeStatsAsJson`. Default `true` (spec "Checkpoint Schema": "which
    /// is the default").
    pub checkpoint_write_stats_as_json: bool,
    /// `delta.checkpoint.writeStatsAsStruct`. Default `true`, as Delta on Spark (the spec's
    /// "Checkpoint Schema" names `false` the default; Spark's `DeltaConfigs` default wins so
    /// that our checkpoints carry `stats_parsed` as Spark's do).
    pub checkpoint_write_stats_as_struct: bool,
    /// `delta.columnMapping.mode` (any case). Default [`ColumnMappingMode::None`] (spec
    /// "Column Mapping"; catalogue E1-01). Whether the protocol lets the property count
    /// (catalogue E1-02) is not checked here.
    pub column_mapping_mode: ColumnMappingMode,
    /// `delta.columnMapping.maxColumnId`. Default `None`.
    pub column_mapping_max_column_id: Option<i64>,
    /// `delta.dataSkippingNumIndexedCols`. Default 32 leaf columns (Delta on Spark); a
    /// negative value means every column.
    pub data_skipping_num_indexed_cols: DataSkippingNumIndexedCols,
    /// `delta.dataSkippingStatsColumns` as written: comma-separated column names, backtick
    /// quoting, dots for nesting (the statistics code splits it). Default `None`: the count
    /// decides.
    pub data_skipping_stats_columns: Option<String>,
    /// `delta.deletedFileRetentionDuration`. Default 1 week (Delta on Spark).
    pub deleted_file_retention_duration: Duration,
    /// `delta.enableChangeDataFeed`. Default `false` (spec "Change Data Files").
    pub enable_change_data_feed: bool,
    /// `delta.enableDeletionVectors`. Default `false` (spec "Deletion Vectors").
    pub enable_deletion_vectors: bool,
    /// `delta.enableExpiredLogCleanup`. Default `true` (Delta on Spark).
    pub enable_expired_log_cleanup: bool,
    /// `delta.enableIcebergCompatV1`. Default `false`.
    pub enable_iceberg_compat_v1: bool,
    /// `delta.enableIcebergCompatV2`. Default `false`.
    pub enable_iceberg_compat_v2: bool,
    /// `delta.enableIcebergCompatV3`. Default `false`.
    pub enable_iceberg_compat_v3: bool,
    /// `delta.enableMaterializePartitionColumnsFeature`. Default `false`.
    pub enable_materialize_partition_columns: bool,
    /// `delta.writePartitionColumnsToParquet`. Default `None`: deltalog does not write
    /// partition values into data files unless a feature asks for it.
    pub write_partition_columns_to_parquet: Option<bool>,
    /// `delta.enableInCommitTimestamps`. Default `false` (Delta on Spark).
    pub enable_in_commit_timestamps: bool,
    /// `delta.enableRowTracking`. Default `false` (spec "Row Tracking").
    pub enable_row_tracking: bool,
    /// `delta.enableTypeWidening`. Default `false` (Delta on Spark).
    pub enable_type_widening: bool,
    /// `delta.inCommitTimestampEnablementVersion`. Default `None`: in-commit timestamps were
    /// on from the table's creation, or are off.
    pub in_commit_timestamp_enablement_version: Option<i64>,
    /// `delta.inCommitTimestampEnablementTimestamp`, in ms since the epoch. Default `None`.
    pub in_commit_timestamp_enablement_timestamp: Option<i64>,
    /// `delta.isolationLevel`. Default `IsolationLevel::WriteSerializable`: the level this
    /// library's writers commit at when the table names none.
    pub isolation_level: IsolationLevel,
    /// `delta.logRetentionDuration`. Default 30 days (Delta on Spark).
    pub log_retention_duration: Duration,
    /// `delta.randomizeFilePrefixes`. Default `false` (Delta on Spark).
    pub randomize_file_prefixes: bool,
    /// `delta.randomPrefixLength`, at least 1. Default 2 (Delta on Spark).
    pub random_prefix_length: usize,
    /// `delta.requireCheckpointProtectionBeforeVersion`. Default 0: no version is protected.
    pub require_checkpoint_protection_before_version: i64,
    /// `delta.rowTrackingSuspended`. Default `false`.
    pub row_tracking_suspended: bool,
    /// `delta.dropFeatureTruncateHistory.retentionDuration`. Default 24 hours (Delta on
    /// Spark).
    pub drop_feature_truncate_history_retention: Duration,
    /// `delta.rowTracking.materializedRowIdColumnName`. Default `None` (spec "Row Tracking").
    pub materialized_row_id_column_name: Option<String>,
    /// `delta.rowTracking.materializedRowCommitVersionColumnName`. Default `None`.
    pub materialized_row_commit_version_column_name: Option<String>,
    /// `delta.setTransactionRetentionDuration`. Default `None`: `txn` actions never expire
    /// (Delta on Spark).
    pub set_transaction_retention_duration: Option<Duration>,
    /// `delta.targetFileSize`, in bytes. Default `None`: the writer decides.
    pub target_file_size: Option<u64>,
    /// The properties whose values did not parse (their fields hold the default), in key
    /// order.
    pub invalid: Vec<InvalidProperty>,
}

/// A table property whose value does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidProperty {
    /// The property key.
    pub key: String,
    /// The value as written.
    pub value: String,
    /// What is wrong, naming the key and the value.
    pub reason: String,
}

/// How many leaf columns get statistics (`delta.dataSkippingNumIndexedCols`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSkippingNumIndexedCols {
    /// Every leaf column (a negative value).
    AllColumns,
    /// The first this many leaf columns, in schema order.
    NumColumns(usize),
}

/// The kind of checkpoint writers create (`delta.checkpointPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckpointPolicy {
    /// Classic checkpoints (`classic`), single-file or multi-part.
    #[default]
    Classic,
    /// V2 checkpoints (`v2`), with a manifest and sidecars.
    V2,
}

/// The isolation level of writes (`delta.isolationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// `Serializable`: reads and writes are serialisable.
    Serializable,
    /// `WriteSerializable`: only writes are serialisable.
    #[default]
    WriteSerializable,
    /// `SnapshotIsolation`: reads see a snapshot; writes may interleave.
    SnapshotIsolation,
}

impl TableProperties {
    /// The properties of `configuration`, leniently: an unparsable value is recorded in
    /// [`TableProperties::invalid`] and its field keeps the default. Keys this library does not
    /// know are ignored.
    pub fn from_configuration(configuration: &HashMap<String, String>) -> TableProperties {
        let mut parser = Parser {
            configuration,
            invalid: Vec::new(),
        };
        let mut properties = TableProperties {
            append_only: parser.boolean(APPEND_ONLY, false),
            checkpoint_interval: parser.positive(CHECKPOINT_INTERVAL, 10),
            checkpoint_policy: parser.parsed(
                CHECKPOINT_POLICY,
                "`classic` or `v2`",
                CheckpointPolicy::parse,
            ),
            checkpoint_retention_duration: parser.duration(CHECKPOINT_RETENTION_DURATION, days(2)),
            checkpoint_write_stats_as_json: parser.boolean(CHECKPOINT_WRITE_STATS_AS_JSON, true),
            checkpoint_write_stats_as_struct: parser
                .boolean(CHECKPOINT_WRITE_STATS_AS_STRUCT, true),
            column_mapping_mode: parser.column_mapping_mode(),
            column_mapping_max_column_id: parser.optional(COLUMN_MAPPING_MAX_COLUMN_ID),
            data_skipping_num_indexed_cols: parser.num_indexed_cols(),
            data_skipping_stats_columns: parser.text(DATA_SKIPPING_STATS_COLUMNS),
            deleted_file_retention_duration: parser
                .duration(DELETED_FILE_RETENTION_DURATION, days(7)),
            enable_change_data_feed: parser.boolean(ENABLE_CHANGE_DATA_FEED, false),
            enable_deletion_vectors: parser.boolean(ENABLE_DELETION_VECTORS, false),
            enable_expired_log_cleanup: parser.boolean(ENABLE_EXPIRED_LOG_CLEANUP, true),
            enable_iceberg_compat_v1: parser.boolean(ENABLE_ICEBERG_COMPAT_V1, false),
            enable_iceberg_compat_v2: parser.boolean(ENABLE_ICEBERG_COMPAT_V2, false),
            enable_iceberg_compat_v3: parser.boolean(ENABLE_ICEBERG_COMPAT_V3, false),
            enable_materialize_partition_columns: parser
                .boolean(ENABLE_MATERIALIZE_PARTITION_COLUMNS, false),
            write_partition_columns_to_parquet: parser.optional_with(
                WRITE_PARTITION_COLUMNS_TO_PARQUET,
                "`true` or `false`",
                parse_bool,
            ),
            enable_in_commit_timestamps: parser.boolean(ENABLE_IN_COMMIT_TIMESTAMPS, false),
            enable_row_tracking: parser.boolean(ENABLE_ROW_TRACKING, false),
            enable_type_widening: parser.boolean(ENABLE_TYPE_WIDENING, false),
            in_commit_timestamp_enablement_version: parser
                .optional(IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION),
            in_commit_timestamp_enablement_timestamp: parser
                .optional(IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP),
            isolation_level: parser.parsed(
                ISOLATION_LEVEL,
                "`Serializable`, `WriteSerializable` or `SnapshotIsolation`",
                IsolationLevel::parse,
            ),
            log_retention_duration: parser.duration(LOG_RETENTION_DURATION, days(30)),
            randomize_file_prefixes: parser.boolean(RANDOMIZE_FILE_PREFIXES, false),
            random_prefix_length: parser.positive(RANDOM_PREFIX_LENGTH, 2),
            require_checkpoint_protection_before_version: parser
                .optional(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION)
                .unwrap_or(0),
            row_tracking_suspended: parser.boolean(ROW_TRACKING_SUSPENDED, false),
            drop_feature_truncate_history_retention: parser.duration(
                DROP_FEATURE_TRUNCATE_HISTORY_RETENTION,
                Duration::from_secs(HOUR_SECONDS * 24),
            ),
            materialized_row_id_column_name: parser
                .text(ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME),
            materialized_row_commit_version_column_name: parser
                .text(ROW_TRACKING_MATERIALIZED_ROW_COMMIT_VERSION_COLUMN_NAME),
            set_transaction_retention_duration: parser
                .optional_duration(SET_TRANSACTION_RETENTION_DURATION),
            target_file_size: parser.optional(TARGET_FILE_SIZE),
            invalid: Vec::new(),
        };
        parser.invalid.sort_by(|a, b| a.key.cmp(&b.key));
        properties.invalid = parser.invalid;
        properties
    }

    /// [`TableProperties::from_configuration`], refusing an unknown `delta.columnMapping.mode`
    /// with an [`Error::InvalidTable`]: the mode decides how every column is read.
    pub fn try_from_configuration(
        configuration: &HashMap<String, String>,
    ) -> Result<TableProperties> {
        let properties = TableProperties::from_configuration(configuration);
        properties.check(COLUMN_MAPPING_MODE)?;
        Ok(properties)
    }

    /// `Ok` when the value of `key` parsed (or is absent), else its [`Error::InvalidTable`]
    /// (naming `metaData.configuration`, the key and the value).
    pub fn check(&self, key: &str) -> Result<()> {
        match self.invalid.iter().find(|invalid| invalid.key == key) {
            Some(invalid) => Err(invalid.to_error()),
            None => Ok(()),
        }
    }
}

impl Default for TableProperties {
    /// The properties of an empty configuration: every default.
    fn default() -> Self {
        TableProperties::from_configuration(&HashMap::new())
    }
}

impl InvalidProperty {
    /// The [`Error::InvalidTable`] of `metaData.configuration` stating the problem.
    pub fn to_error(&self) -> Error {
        Error::invalid_table("metaData.configuration", &self.reason)
    }
}

impl DataSkippingNumIndexedCols {
    /// The number of leaf columns with statistics, `None` for every column.
    pub fn limit(self) -> Option<usize> {
        match self {
            DataSkippingNumIndexedCols::AllColumns => None,
            DataSkippingNumIndexedCols::NumColumns(count) => Some(count),
        }
    }
}

impl CheckpointPolicy {
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "classic" => Some(CheckpointPolicy::Classic),
            "v2" => Some(CheckpointPolicy::V2),
            _ => None,
        }
    }
}

impl IsolationLevel {
    /// The level named `Serializable`, `WriteSerializable` or `SnapshotIsolation` (any case).
    pub fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "serializable" => Some(IsolationLevel::Serializable),
            "writeserializable" => Some(IsolationLevel::WriteSerializable),
            "snapshotisolation" => Some(IsolationLevel::SnapshotIsolation),
            _ => None,
        }
    }
}

/// The column mapping mode of `configuration` (`delta.columnMapping.mode`, any case; `none`
/// when absent). An unknown mode is an [`Error::InvalidTable`] of `metaData.configuration`.
pub(crate) fn column_mapping_mode(
    configuration: &HashMap<String, String>,
) -> Result<ColumnMappingMode> {
    match configuration.get(COLUMN_MAPPING_MODE) {
        None => Ok(ColumnMappingMode::None),
        Some(value) => value
            .parse()
            .map_err(|_| unknown_column_mapping_mode(value).to_error()),
    }
}

/// A boolean property value as Delta on Spark reads it: `true` or `false` in any case.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A duration property value as Delta on Spark writes it: a Spark interval such as
/// `interval 1 week` or `interval 30 days` (the `interval` word optional, several
/// `<count> <unit>` pairs added up; units from nanoseconds to weeks, singular or plural).
/// Negative counts, months and years are refused (Delta on Spark refuses them too).
pub(crate) fn parse_duration(value: &str) -> Option<Duration> {
    let lower = value.trim().to_ascii_lowercase();
    let mut words = lower.split_whitespace().peekable();
    if words.peek() == Some(&"interval") {
        words.next();
    }
    let mut total = Duration::ZERO;
    let mut any = false;
    while let Some(count) = words.next() {
        let count: u64 = count.parse().ok()?;
        let unit = words.next()?;
        let unit_nanos: u64 = match unit.strip_suffix('s').unwrap_or(unit) {
            "nanosecond" => 1,
            "microsecond" => 1_000,
            "millisecond" => 1_000_000,
            "second" => 1_000_000_000,
            "minute" => 60 * 1_000_000_000,
            "hour" => 3_600 * 1_000_000_000,
            "day" => 86_400 * 1_000_000_000,
            "week" => 7 * 86_400 * 1_000_000_000,
            _ => return None,
        };
        let nanos = count.checked_mul(unit_nanos)?;
        total = total.checked_add(Duration::from_nanos(nanos))?;
        any = true;
    }
    any.then_some(total)
}

/// Reads the keys of one configuration, collecting the values that do not parse.
struct Parser<'a> {
    configuration: &'a HashMap<String, String>,
    invalid: Vec<InvalidProperty>,
}

impl Parser<'_> {
    fn reject(&mut self, key: &str, value: &str, expected: &str) {
        self.invalid.push(InvalidProperty {
            key: key.to_string(),
            value: value.to_string(),
            reason: format!("{key} must be {expected}, got `{value}`"),
        });
    }

    /// The value of `key` parsed by `parse`, the default when absent or unparsable.
    fn parsed<T: Default>(
        &mut self,
        key: &str,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> T {
        self.optional_with(key, expected, parse).unwrap_or_default()
    }

    fn optional_with<T>(
        &mut self,
        key: &str,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let value = self.configuration.get(key)?;
        let parsed = parse(value);
        if parsed.is_none() {
            self.reject(key, value, expected);
        }
        parsed
    }

    fn boolean(&mut self, key: &str, default: bool) -> bool {
        self.optional_with(key, "`true` or `false`", parse_bool)
            .unwrap_or(default)
    }

    fn optional<T: std::str::FromStr>(&mut self, key: &str) -> Option<T> {
        self.optional_with(key, "an integer", |value| value.trim().parse().ok())
    }

    fn positive<T: std::str::FromStr + PartialOrd + From<u8>>(
        &mut self,
        key: &str,
        default: T,
    ) -> T {
        let parse = |value: &str| value.trim().parse().ok().filter(|n: &T| *n >= T::from(1));
        self.optional_with(key, "a positive integer", parse)
            .unwrap_or(default)
    }

    fn duration(&mut self, key: &str, default: Duration) -> Duration {
        self.optional_duration(key).unwrap_or(default)
    }

    fn optional_duration(&mut self, key: &str) -> Option<Duration> {
        let expected = "an interval such as `interval 1 week`";
        self.optional_with(key, expected, parse_duration)
    }

    fn text(&mut self, key: &str) -> Option<String> {
        self.configuration.get(key).cloned()
    }

    fn column_mapping_mode(&mut self) -> ColumnMappingMode {
        let value = self.configuration.get(COLUMN_MAPPING_MODE);
        match value.map(|value| (value, value.parse::<ColumnMappingMode>())) {
            None => ColumnMappingMode::None,
            Some((_, Ok(mode))) => mode,
            Some((value, Err(_))) => {
                self.invalid.push(unknown_column_mapping_mode(value));
                ColumnMappingMode::None
            }
        }
    }

    fn num_indexed_cols(&mut self) -> DataSkippingNumIndexedCols {
        let parse = |value: &str| value.trim().parse::<i64>().ok();
        match self.optional_with(DATA_SKIPPING_NUM_INDEXED_COLS, "an integer", parse) {
            None => DataSkippingNumIndexedCols::NumColumns(DEFAULT_NUM_INDEXED_COLS),
            Some(count) => match usize::try_from(count) {
                Ok(count) => DataSkippingNumIndexedCols::NumColumns(count),
                Err(_) => DataSkippingNumIndexedCols::AllColumns,
            },
        }
    }
}

fn unknown_column_mapping_mode(value: &str) -> InvalidProperty {
    InvalidProperty {
        key: COLUMN_MAPPING_MODE.to_string(),
        value: value.to_string(),
        reason: format!("unknown {COLUMN_MAPPING_MODE} `{value}` (expected none, name or id)"),
    }
}

const HOUR_SECONDS: u64 = 60 * 60;

fn days(count: u64) -> Duration {
    Duration::from_secs(count * 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_of_an_empty_configuration() {
        let p = TableProperties::default();
        assert!(!p.append_only);
        assert_eq!(p.checkpoint_interval, 10);
        assert_eq!(p.checkpoint_policy, CheckpointPolicy::Classic);
        assert_eq!(p.checkpoint_retention_duration, days(2));
        assert!(p.checkpoint_write_stats_as_json);
        assert!(p.checkpoint_write_stats_as_struct);
        assert_eq!(p.column_mapping_mode, ColumnMappingMode::None);
        assert_eq!(p.column_mapping_max_column_id, None);
        assert_eq!(
            p.data_skipping_num_indexed_cols,
            DataSkippingNumIndexedCols::NumColumns(32)
        );
        assert_eq!(p.data_skipping_stats_columns, None);
        assert_eq!(p.deleted_file_retention_duration, days(7));
        assert!(!p.enable_change_data_feed);
        assert!(!p.enable_deletion_vectors);
        assert!(p.enable_expired_log_cleanup);
        assert!(!p.enable_in_commit_timestamps);
        assert!(!p.enable_row_tracking);
        assert_eq!(p.isolation_level, IsolationLevel::WriteSerializable);
        assert_eq!(p.log_retention_duration, days(30));
        assert!(!p.randomize_file_prefixes);
        assert_eq!(p.random_prefix_length, 2);
        assert_eq!(p.require_checkpoint_protection_before_version, 0);
        assert_eq!(p.materialized_row_id_column_name, None);
        assert_eq!(p.set_transaction_retention_duration, None);
        assert_eq!(p.target_file_size, None);
        assert!(p.invalid.is_empty());
    }

    #[test]
    fn values_parse_into_their_types() {
        let p = TableProperties::from_configuration(&config(&[
            (APPEND_ONLY, "TRUE"),
            (CHECKPOINT_INTERVAL, " 5 "),
            (CHECKPOINT_POLICY, "v2"),
            (CHECKPOINT_WRITE_STATS_AS_STRUCT, "false"),
            (COLUMN_MAPPING_MODE, "Name"),
            (COLUMN_MAPPING_MAX_COLUMN_ID, "7"),
            (DATA_SKIPPING_NUM_INDEXED_COLS, "-1"),
            (DATA_SKIPPING_STATS_COLUMNS, "a, `b.c`"),
            (DELETED_FILE_RETENTION_DURATION, "interval 2 days 12 hours"),
            (ENABLE_CHANGE_DATA_FEED, "true"),
            (ENABLE_DELETION_VECTORS, "true"),
            (ENABLE_IN_COMMIT_TIMESTAMPS, "true"),
            (IN_COMMIT_TIMESTAMP_ENABLEMENT_VERSION, "3"),
            (IN_COMMIT_TIMESTAMP_ENABLEMENT_TIMESTAMP, "1700000000000"),
            (ENABLE_ROW_TRACKING, "true"),
            (ISOLATION_LEVEL, "WriteSerializable"),
            (LOG_RETENTION_DURATION, "interval 1 week"),
            (ROW_TRACKING_MATERIALIZED_ROW_ID_COLUMN_NAME, "_row-id-col"),
            (SET_TRANSACTION_RETENTION_DURATION, "1 hour"),
            (TARGET_FILE_SIZE, "134217728"),
        ]));
        assert!(p.invalid.is_empty(), "{:?}", p.invalid);
        assert!(p.append_only);
        assert_eq!(p.checkpoint_interval, 5);
        assert_eq!(p.checkpoint_policy, CheckpointPolicy::V2);
        assert!(!p.checkpoint_write_stats_as_struct);
        assert_eq!(p.column_mapping_mode, ColumnMappingMode::Name);
        assert_eq!(p.column_mapping_max_column_id, Some(7));
        assert_eq!(
            p.data_skipping_num_indexed_cols,
            DataSkippingNumIndexedCols::AllColumns
        );
        assert_eq!(p.data_skipping_num_indexed_cols.limit(), None);
        assert_eq!(p.data_skipping_stats_columns.as_deref(), Some("a, `b.c`"));
        assert_eq!(
            p.deleted_file_retention_duration,
            days(2) + Duration::from_secs(12 * 3600)
        );
        assert!(p.enable_change_data_feed && p.enable_deletion_vectors && p.enable_row_tracking);
        assert!(p.enable_in_commit_timestamps);
        assert_eq!(p.in_commit_timestamp_enablement_version, Some(3));
        assert_eq!(
            p.in_commit_timestamp_enablement_timestamp,
            Some(1_700_000_000_000)
        );
        assert_eq!(p.isolation_level, IsolationLevel::WriteSerializable);
        assert_eq!(p.log_retention_duration, days(7));
        assert_eq!(
            p.materialized_row_id_column_name.as_deref(),
            Some("_row-id-col")
        );
        assert_eq!(
            p.set_transaction_retention_duration,
            Some(Duration::from_secs(3600))
        );
        assert_eq!(p.target_file_size, Some(134_217_728));
    }

    #[test]
    fn bad_values_keep_the_default_and_are_recorded() {
        let p = TableProperties::from_configuration(&config(&[
            (APPEND_ONLY, "yes"),
            (CHECKPOINT_INTERVAL, "0"),
            (DATA_SKIPPING_NUM_INDEXED_COLS, "many"),
            (LOG_RETENTION_DURATION, "interval 1 month"),
            ("delta.someFutureProperty", "whatever"),
        ]));
        assert!(!p.append_only);
        assert_eq!(p.checkpoint_interval, 10);
        assert_eq!(
            p.data_skipping_num_indexed_cols,
            DataSkippingNumIndexedCols::NumColumns(DEFAULT_NUM_INDEXED_COLS)
        );
        assert_eq!(p.log_retention_duration, days(30));
        let keys: Vec<&str> = p.invalid.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                APPEND_ONLY,
                CHECKPOINT_INTERVAL,
                DATA_SKIPPING_NUM_INDEXED_COLS,
                LOG_RETENTION_DURATION
            ]
        );
        let error = p
            .check(DATA_SKIPPING_NUM_INDEXED_COLS)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("delta.dataSkippingNumIndexedCols must be an integer, got `many`"),
            "{error}"
        );
        assert!(p.check(ENABLE_CHANGE_DATA_FEED).is_ok());
    }

    #[test]
    fn column_mapping_mode_from_configuration() {
        let config = |v: &str| HashMap::from([(COLUMN_MAPPING_MODE.to_string(), v.to_string())]);
        let mode = column_mapping_mode;
        assert_eq!(mode(&HashMap::new()).unwrap(), ColumnMappingMode::None);
        assert_eq!(mode(&config("name")).unwrap(), ColumnMappingMode::Name);
        assert_eq!(mode(&config("ID")).unwrap(), ColumnMappingMode::Id);
        assert_eq!(mode(&config("none")).unwrap(), ColumnMappingMode::None);
        let e = mode(&config("bogus")).unwrap_err().to_string();
        assert!(
            e.contains("unknown delta.columnMapping.mode `bogus`"),
            "{e}"
        );
        let strict = TableProperties::try_from_configuration(&config("bogus"));
        assert_eq!(strict.unwrap_err().to_string(), e);
        let lenient = TableProperties::from_configuration(&config("bogus"));
        assert_eq!(lenient.column_mapping_mode, ColumnMappingMode::None);
    }

    #[test]
    fn durations_read_as_spark_intervals() {
        let hour = Duration::from_secs(3600);
        assert_eq!(parse_duration("interval 1 week"), Some(days(7)));
        assert_eq!(parse_duration("INTERVAL 30 DAYS"), Some(days(30)));
        assert_eq!(parse_duration("2 hours"), Some(2 * hour));
        assert_eq!(
            parse_duration("interval 1 second 500 milliseconds"),
            Some(Duration::from_millis(1500))
        );
        for bad in ["", "interval", "1", "interval -1 day", "1 month", "one day"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn booleans_read_as_spark_reads_them() {
        assert_eq!(parse_bool("true"), Some(true));
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("False"), Some(false));
        assert_eq!(parse_bool("1"), None);
        assert_eq!(parse_bool(" true"), None);
    }
}
