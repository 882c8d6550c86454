//! Who a streaming sink's commits belong to: the `txn` application id that makes each
//! micro-batch commit exactly once (spec "Set Transaction Identifiers"), and the query id the
//! commits record, chosen as Delta on Spark's streaming sink chooses them.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::ops::distributed::MicroBatch;
use crate::storage::{table_root_url, Storage};

/// The file in a streaming query's checkpoint whose first line is `{"id": "<query id>"}`.
const CHECKPOINT_METADATA: &str = "metadata";

/// A streaming query writing to a table: the `txn` application id of its commits and the
/// query id they record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamingQuery {
    /// The `txn` application id.
    pub app_id: String,
    /// The streaming query's id (`queryId` of every `STREAMING UPDATE` commit).
    pub query_id: String,
}

impl StreamingQuery {
    /// The query writing with the sink option `app_id` (`txnAppId`) and its checkpoint at
    /// `checkpoint_location`. The application id is `app_id` when given, else the query id
    /// the checkpoint records (first line of `<checkpoint>/metadata`, read from the local file
    /// system only, as it has always been), else the checkpoint location itself; the query id
    /// is the recorded one, else the application id.
    ///
    /// Changing this choice would make a restarted query commit its micro-batches again, so
    /// it never changes. Errors: [`Error::InvalidArgument`] without either value, or when
    /// the checkpoint's metadata file exists but holds no query id (naming the file).
    pub async fn identify(
        app_id: Option<String>,
        checkpoint_location: Option<&str>,
    ) -> Result<StreamingQuery> {
        let recorded = match checkpoint_location {
            Some(location) => recorded_query_id(location).await?,
            None => None,
        };
        let app_id = match (app_id, checkpoint_location) {
            (Some(app_id), _) => app_id,
            (None, Some(location)) => recorded.clone().unwrap_or_else(|| location.to_string()),
            (None, None) => {
                return Err(Error::InvalidArgument(
                    "a streaming write needs a checkpoint location or a txn application id".into(),
                ))
            }
        };
        let query_id = recorded.unwrap_or_else(|| app_id.clone());
        Ok(StreamingQuery { app_id, query_id })
    }

    /// The micro-batch `epoch_id` of this query.
    pub fn micro_batch(&self, epoch_id: i64) -> MicroBatch {
        MicroBatch {
            app_id: self.app_id.clone(),
            query_id: self.query_id.clone(),
            epoch_id,
        }
    }
}

/// The query id the checkpoint at `location` records, when it is on the local file system
/// and has a metadata file.
async fn recorded_query_id(location: &str) -> Result<Option<String>> {
    let is_local = table_root_url(location).is_ok_and(|url| url.scheme() == "file");
    if !is_local {
        return Ok(None);
    }
    let checkpoint = Storage::open(location, &HashMap::new())?;
    let path = checkpoint.resolve(CHECKPOINT_METADATA)?;
    let Some(bytes) = checkpoint.read_if_exists(&path).await? else {
        return Ok(None);
    };
    let unreadable = |reason: &str| {
        let file = checkpoint.url_of(&path);
        Error::InvalidArgument(format!("streaming checkpoint metadata {file}: {reason}"))
    };
    let first_line = bytes
        .split(|byte| *byte == b'\n')
        .next()
        .unwrap_or_default();
    let value: Value = serde_json::from_slice(first_line)
        .map_err(|error| unreadable(&format!("not JSON: {error}")))?;
    match value.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => Ok(Some(id.to_string())),
        _ => Err(unreadable("it records no query id")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint_with(metadata: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(text) = metadata {
            std::fs::write(dir.path().join(CHECKPOINT_METADATA), text).unwrap();
        }
        dir
    }

    async fn identify(app_id: Option<&str>, location: Option<&str>) -> Result<StreamingQuery> {
        StreamingQuery::identify(app_id.map(str::to_string), location).await
    }

    #[tokio::test]
    async fn the_recorded_query_id_names_the_query_and_its_commits() {
        let dir = checkpoint_with(Some("{\"id\":\"q-1\"}\n"));
        let location = dir.path().to_str().unwrap();
        let query = identify(None, Some(location)).await.unwrap();
        assert_eq!(
            (query.app_id.as_str(), query.query_id.as_str()),
            ("q-1", "q-1")
        );
        let url = format!("file://{location}");
        assert_eq!(identify(None, Some(&url)).await.unwrap(), query);
        let named = identify(Some("app"), Some(location)).await.unwrap();
        assert_eq!(
            (named.app_id.as_str(), named.query_id.as_str()),
            ("app", "q-1")
        );
        assert_eq!(named.micro_batch(7).epoch_id, 7);
        assert_eq!(named.micro_batch(7).app_id, "app");
    }

    #[tokio::test]
    async fn without_a_recorded_id_the_location_or_the_app_id_stands_for_it() {
        let dir = checkpoint_with(None);
        let location = dir.path().to_str().unwrap();
        let query = identify(None, Some(location)).await.unwrap();
        assert_eq!(
            (query.app_id.as_str(), query.query_id.as_str()),
            (location, location)
        );
        let remote = identify(None, Some("s3://bucket/checkpoints/q"))
            .await
            .unwrap();
        assert_eq!(remote.app_id, "s3://bucket/checkpoints/q");
        let named = identify(Some("app"), None).await.unwrap();
        assert_eq!(
            (named.app_id.as_str(), named.query_id.as_str()),
            ("app", "app")
        );
    }

    #[tokio::test]
    async fn a_query_needs_a_checkpoint_or_an_app_id() {
        let error = identify(None, None).await.unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    }

    #[tokio::test]
    async fn an_unreadable_metadata_file_is_named() {
        for text in ["not json", "{\"name\":\"q\"}"] {
            let dir = checkpoint_with(Some(text));
            let location = dir.path().to_str().unwrap();
            let error = identify(None, Some(location)).await.unwrap_err();
            let message = error.to_string();
            assert!(matches!(error, Error::InvalidArgument(_)), "{message}");
            assert!(message.contains("/metadata"), "{message}");
        }
    }
}
