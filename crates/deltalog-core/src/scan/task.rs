//! Scan tasks: a share of a planned [`Scan`]'s files, as a value another process can read
//! without the table's log (a Spark task of a distributed read, say).
//!
//! A [`ScanTask`] holds what reading its files needs: the table root, the version the scan was
//! planned at, that version's `protocol` and `metaData` actions, the scan's options and the
//! file list rows of its files. [`ScanTask::encode`] writes it in the one wire format,
//! [`ScanTask::decode`] reads it back:
//!
//! ```text
//! "DLTASK1\n" | header length (u32, little endian) | header (JSON) | files (Arrow IPC stream)
//! ```
//!
//! The header is a JSON object with `tableUri`, `version`, `protocol` and `metaData` (the
//! actions as the log writes them, spec "Protocol Evolution" and "Change Metadata"),
//! `columns` (a list of names or null), `filter` (SQL text that [`crate::expr::parse_sql`]
//! reads, or null), `timezone`, `rowTracking`, `rowAddress` (absent means false), `batchSize` and
//! `concurrency`. Storage options
//! (credentials) are never part of a task: the reader gives its own.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use serde::{Deserialize, Serialize};

use super::{int64_column, Scan, ScanOptions};
use crate::actions::partition::SessionTimeZone;
use crate::actions::{Metadata, Protocol};
use crate::error::{Error, Result};
use crate::expr::parse_sql;
use crate::storage::Storage;

/// The size in bytes a task aims at unless asked otherwise (Spark's
/// `spark.sql.files.maxPartitionBytes` default).
pub const DEFAULT_TARGET_SIZE: u64 = 128 * 1024 * 1024;
/// What opening a file costs, counted in bytes, unless asked otherwise (Spark's
/// `spark.sql.files.openCostInBytes` default).
pub const DEFAULT_OPEN_COST: u64 = 4 * 1024 * 1024;

/// The first bytes of an encoded task: the format and its version.
const MAGIC: &[u8] = b"DLTASK1\n";

/// What a scan was planned from, apart from its files: shared by the scan and its tasks.
#[derive(Debug, Clone)]
pub(crate) struct TaskSource {
    pub(crate) table_uri: String,
    pub(crate) version: u64,
    pub(crate) protocol: Protocol,
    pub(crate) metadata: Metadata,
    pub(crate) options: ScanOptions,
}

/// A share of a scan's files that can be read anywhere (see the module documentation).
#[derive(Debug, Clone)]
pub struct ScanTask {
    source: Arc<TaskSource>,
    files_schema: SchemaRef,
    files: Vec<RecordBatch>,
}

impl ScanTask {
    /// The task of the file list rows `files` (of the schema `files_schema`) of a scan
    /// planned from `source`.
    pub(crate) fn new(
        source: Arc<TaskSource>,
        files_schema: SchemaRef,
        files: Vec<RecordBatch>,
    ) -> ScanTask {
        ScanTask {
            source,
            files_schema,
            files,
        }
    }

    /// The table root as a URL ending in '/'.
    pub fn table_uri(&self) -> &str {
        &self.source.table_uri
    }

    /// The table version the scan was planned at.
    pub fn version(&self) -> u64 {
        self.source.version
    }

    /// The `protocol` action of that version.
    pub fn protocol(&self) -> &Protocol {
        &self.source.protocol
    }

    /// The `metaData` action of that version.
    pub fn metadata(&self) -> &Metadata {
        &self.source.metadata
    }

    /// The options of the scan.
    pub fn options(&self) -> &ScanOptions {
        &self.source.options
    }

    /// The file list rows of the task's files (the columns of [`Scan::files`]).
    pub fn files(&self) -> &[RecordBatch] {
        &self.files
    }

    /// How many data files the task reads.
    pub fn num_files(&self) -> usize {
        self.files.iter().map(RecordBatch::num_rows).sum()
    }

    /// The total size in bytes of the task's files (the sum of their `size`; a negative or
    /// missing size counts 0).
    pub fn size(&self) -> Result<u64> {
        total_size(&self.files, self.table_uri())
    }

    /// The scan of the task's files, read as the scan it came from reads them (see
    /// [`Scan::over_files`]), through a store opened with `storage_options`.
    pub fn scan(&self, storage_options: &HashMap<String, String>) -> Result<Scan> {
        let storage = Storage::open(self.table_uri(), storage_options)?;
        Scan::over_files(
            &storage,
            self.version(),
            self.protocol(),
            self.metadata(),
            self.options().clone(),
            self.files.clone(),
        )
    }

    /// The task in the wire format of the module documentation.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let header = Header::of(&self.source);
        let header = serde_json::to_vec(&header).map_err(|error| {
            Error::internal_invariant(format!("cannot encode a scan task's header: {error}"))
        })?;
        let length = u32::try_from(header.len()).map_err(|_| {
            Error::InvalidArgument("a scan task's header is larger than 4 GiB".to_string())
        })?;
        let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + header.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(&header);
        let encode_files = |bytes: Vec<u8>| {
            let mut writer = StreamWriter::try_new(bytes, &self.files_schema)?;
            for batch in &self.files {
                writer.write(batch)?;
            }
            writer.into_inner()
        };
        encode_files(bytes).map_err(|error| Error::arrow("encoding a scan task's file list", error))
    }

    /// The task `bytes` hold (written by [`ScanTask::encode`]). Bytes of another format, a
    /// header that is not valid, a filter or time zone that does not parse, and a file list
    /// that is not an Arrow IPC stream are an [`Error::InvalidArgument`].
    pub fn decode(bytes: &[u8]) -> Result<ScanTask> {
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| invalid("it does not start with the scan task marker".to_string()))?;
        let (length, rest) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| invalid("it ends before its header".to_string()))?;
        let length = usize::try_from(u32::from_le_bytes(*length))
            .map_err(|_| invalid("its header length does not fit in memory".to_string()))?;
        if rest.len() < length {
            return Err(invalid("it ends inside its header".to_string()));
        }
        let (header, files) = rest.split_at(length);
        let header: Header = serde_json::from_slice(header)
            .map_err(|error| invalid(format!("its header is not valid: {error}")))?;
        let source = header.into_source()?;
        let reader = StreamReader::try_new(files, None).map_err(|error| {
            invalid(format!("its file list is not an Arrow IPC stream: {error}"))
        })?;
        let files_schema = reader.schema();
        let files = reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|error| {
                invalid(format!("its file list is not an Arrow IPC stream: {error}"))
            })?;
        Ok(ScanTask::new(Arc::new(source), files_schema, files))
    }
}

/// The sum of the `size` column of file list rows (negative sizes count 0).
pub(crate) fn total_size(files: &[RecordBatch], table: &str) -> Result<u64> {
    let mut total = 0u64;
    for batch in files {
        let sizes = int64_column(batch, "size", table)?;
        for size in sizes.iter().flatten() {
            total = total.saturating_add(u64::try_from(size).unwrap_or(0));
        }
    }
    Ok(total)
}

/// The JSON header of an encoded task.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    table_uri: String,
    version: u64,
    protocol: Protocol,
    #[serde(rename = "metaData")]
    metadata: Metadata,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    timezone: String,
    row_tracking: bool,
    #[serde(default)]
    row_address: bool,
    batch_size: usize,
    concurrency: usize,
}

impl Header {
    fn of(source: &TaskSource) -> Header {
        let options = &source.options;
        Header {
            table_uri: source.table_uri.clone(),
            version: source.version,
            protocol: source.protocol.clone(),
            metadata: source.metadata.clone(),
            columns: options.columns.clone(),
            filter: options.filter.as_ref().map(ToString::to_string),
            timezone: options.timezone.to_string(),
            row_tracking: options.row_tracking,
            row_address: options.row_address,
            batch_size: options.batch_size,
            concurrency: options.concurrency,
        }
    }

    fn into_source(self) -> Result<TaskSource> {
        let filter = self
            .filter
            .as_deref()
            .map(parse_sql)
            .transpose()
            .map_err(|error| invalid(format!("its filter does not parse: {error}")))?;
        let timezone = SessionTimeZone::parse(&self.timezone)
            .map_err(|error| invalid(format!("its time zone does not parse: {error}")))?;
        Ok(TaskSource {
            table_uri: self.table_uri,
            version: self.version,
            protocol: self.protocol,
            metadata: self.metadata,
            options: ScanOptions {
                columns: self.columns,
                timezone,
                row_tracking: self.row_tracking,
                row_address: self.row_address,
                only_files: None,
                batch_size: self.batch_size,
                concurrency: self.concurrency,
                filter,
            },
        })
    }
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument(format!(
        "these bytes are not a deltalog scan task: {reason}"
    ))
}
