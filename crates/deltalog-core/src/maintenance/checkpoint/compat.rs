//! The classic-named copy of a UUID-named V2 checkpoint (spec "Handling Backward compatibility
//! while moving to UUID-named v2 Checkpoints", "Checkpoint Naming Scheme": a V2 spec checkpoint
//! may be classic-named).
//!
//! Readers that know only classic names find `n.checkpoint.parquet`, read its protocol and fail
//! with a protocol error instead of a missing-commit one once the commits before `n` are gone.
//! The copy holds the manifest's rows as they are (Delta on Spark's shallow copy): the
//! non-file actions, `checkpointMetadata`, and either the same `sidecar` actions, so both
//! checkpoints share the sidecars, or the file actions the manifest holds inline.
//!
//! Delta on Spark writes the copy during metadata cleanup, before deleting anything, when the
//! newest checkpoint is UUID-named and no classic or multi-part checkpoint of that version
//! exists ([`needs_classic_copy`]); [`super::CheckpointOptions::classic_compat`] writes it with
//! the checkpoint.

use arrow_array::RecordBatch;
use object_store::path::Path;
use parquet::arrow::ParquetRecordBatchStreamBuilder;

use super::out::ParquetFileOut;
use super::rows::json_rows;
use super::schema::CheckpointLayout;
use crate::error::{Error, Result};
use crate::log::path::{
    classic_checkpoint_file_name, CheckpointFormat, CheckpointKind, LogFileKind,
};
use crate::log::segment::CheckpointFiles;
use crate::storage::Storage;
use crate::table_config::TableConfiguration;

/// JSON lines decoded per batch when a JSON manifest is copied.
const JSON_LINES_PER_BATCH: usize = 8 * 1024;

/// The classic copy written: its URL and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClassicCopy {
    pub url: String,
    pub size: u64,
}

/// The UUID-named manifest among `checkpoints` (the complete checkpoints of one version, the
/// preferred first) that needs a classic-named copy: the preferred one is UUID-named and no
/// classic or multi-part checkpoint of its version exists.
pub(crate) fn needs_classic_copy(checkpoints: &[CheckpointFiles]) -> Option<&CheckpointFiles> {
    let preferred = checkpoints.first()?;
    let uuid_named = |checkpoint: &CheckpointFiles| {
        checkpoint.parts.iter().all(|part| {
            matches!(
                part.kind,
                LogFileKind::Checkpoint(CheckpointKind::Uuid { .. })
            )
        })
    };
    let version = preferred.version;
    let same_version = checkpoints.iter().filter(|c| c.version == version);
    let has_classic_name = same_version.clone().any(|c| !uuid_named(c));
    (uuid_named(preferred) && !has_classic_name).then_some(preferred)
}

/// Writes `n.checkpoint.parquet` holding the rows of the UUID-named manifest at `manifest`
/// (of `format`) for `version`. A JSON manifest's lines are laid out as the table's V2
/// checkpoint schema (`config`); a Parquet manifest's row groups are copied one at a time with
/// its own schema. Nothing is left under the classic name when the copy fails.
pub(crate) async fn write_classic_copy(
    storage: &Storage,
    config: &TableConfiguration,
    manifest: &Path,
    format: CheckpointFormat,
    version: u64,
    row_group_rows: usize,
) -> Result<ClassicCopy> {
    let target = storage.log_file(&classic_checkpoint_file_name(version));
    let name = storage.url_of(manifest);
    let corrupt = |error: parquet::errors::ParquetError| Error::corrupt(name.clone(), error);
    let (schema, mut row_groups) = match format {
        CheckpointFormat::Json => {
            let schema = CheckpointLayout::new(config, true)?.schema;
            (schema, None)
        }
        CheckpointFormat::Parquet => {
            let reader = storage.parquet_reader(manifest, None);
            let builder = ParquetRecordBatchStreamBuilder::new(reader)
                .await
                .map_err(corrupt)?;
            let schema = builder.schema().clone();
            (schema, Some(builder.build().map_err(corrupt)?))
        }
    };
    let mut file = ParquetFileOut::create(storage, &target, schema.clone(), row_group_rows)?;
    let copied = match row_groups.as_mut() {
        None => copy_json_lines(storage, manifest, &schema, &mut file).await,
        Some(stream) => loop {
            let row_group = match stream.next_row_group().await.map_err(corrupt) {
                Ok(Some(row_group)) => row_group,
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            };
            let (file_name, batch_schema) = (name.clone(), schema.clone());
            let batches = move || {
                let batches = row_group
                    .collect::<std::result::Result<Vec<RecordBatch>, _>>()
                    .map_err(|error| Error::corrupt(file_name, error))?;
                arrow::compute::concat_batches(&batch_schema, &batches)
                    .map(Some)
                    .map_err(|error| Error::arrow("a V2 checkpoint's rows", error))
            };
            if let Err(error) = file.write_with(batches).await {
                break Err(error);
            }
        },
    };
    if let Err(error) = copied {
        file.abort().await;
        return Err(error);
    }
    let url = file.name().to_string();
    let size = file.finish().await?;
    Ok(ClassicCopy { url, size })
}

/// Writes the lines of the JSON manifest at `manifest` to `file` as rows of `schema`.
async fn copy_json_lines(
    storage: &Storage,
    manifest: &Path,
    schema: &arrow_schema::SchemaRef,
    file: &mut ParquetFileOut,
) -> Result<()> {
    let bytes = storage.read(manifest).await?;
    let name = storage.url_of(manifest);
    let text = std::str::from_utf8(&bytes).map_err(|error| Error::corrupt(&name, error))?;
    let lines: Vec<String> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_string)
        .collect();
    for chunk in lines.chunks(JSON_LINES_PER_BATCH) {
        let (chunk, schema) = (chunk.to_vec(), schema.clone());
        file.write_with(move || json_rows(&chunk, &schema).map(Some))
            .await?;
    }
    Ok(())
}
