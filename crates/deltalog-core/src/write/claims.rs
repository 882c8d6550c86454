//! Claims on the identity sequence shared by the tasks of one distributed write or MERGE (spec
//! "Identity Columns": every value generated is `start + n·step` beyond the high-water mark,
//! and no two rows of a column get the same one).
//!
//! The tasks of a distributed write run apart and do not know how many others there are, so
//! they cannot split the sequence among themselves by counting (Delta on Spark interleaves
//! by partition count, which a Python data source task does not get). Instead they claim
//! stretches of it in turn, through the table's store: claim `n` is the object
//! `_delta_log/_identity/<key>/<n>.claim`, written only if absent, holding the positions it
//! covers, which start where claim `n - 1` ends. A task that loses the race for a number
//! reads the winner and claims the next one, so claimed stretches never overlap and leave no
//! gaps between them. Position `p` of an identity column is the value `base + p·step`, `base`
//! following the column's high-water mark that claim 0 recorded (read from the table's
//! newest metadata when it was written).
//!
//! The commit reads the claims back ([`IdentityClaims::new_high_water_marks`]): the last
//! claim's end gives the new high-water marks (the values of the last position claimed, so
//! unused positions at the end of a task's last claim are skipped, never reused), and the
//! recorded marks must still be the table's, or a concurrent commit generated values from
//! the same base. The claims are deleted once the write commits or gives up
//! ([`IdentityClaims::remove`]).
//!
//! Claims need a store with conditional puts: without them two tasks could both take one
//! number.

use std::ops::Range;

use bytes::Bytes;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::error::{ConflictKind, Error, Result};
use crate::schema::StructType;
use crate::snapshot::{Snapshot, SnapshotAt};
use crate::storage::Storage;

use super::duties::{claimed_high_water_marks, identity_high_water_marks, HighWaterMarks};

/// The folder of `_delta_log` holding the claims of every write in progress.
pub(crate) const CLAIMS_DIR: &str = "_identity";

/// A task's claims double in size up to this many positions.
const MAX_CLAIM: u64 = 1 << 24;

/// How many numbers a task tries before it gives up (every failed try means another task
/// claimed in between).
const MAX_TRIES: usize = 10_000;

/// One claim, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Claim {
    /// First position claimed.
    start: u64,
    /// One past the last position claimed.
    end: u64,
    /// The marks the positions count from (claim 0's, copied forward).
    high_water_marks: HighWaterMarks,
}

/// What the claims of a write add up to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClaimsSummary {
    /// One past the last position any task claimed.
    pub(crate) end: u64,
    /// The marks the positions count from.
    pub(crate) high_water_marks: HighWaterMarks,
}

/// A task's handle on the claims of one write.
#[derive(Debug, Clone)]
pub(crate) struct IdentityClaims {
    storage: Storage,
    dir: Path,
    /// The size of this task's last claim (`0`: none yet).
    last_size: u64,
}

impl IdentityClaims {
    /// The claims of the write `key` (letters, digits, `-` and `_` only: it names a folder)
    /// in the table of `storage`.
    pub(crate) fn new(storage: Storage, key: &str) -> Result<IdentityClaims> {
        let valid = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(Error::InvalidArgument(format!(
                "`{key}` cannot name the identity claims of a write: letters, digits, `-` and \
                 `_` only"
            )));
        }
        let dir = storage.log_dir().clone().join(CLAIMS_DIR).join(key);
        Ok(IdentityClaims {
            storage,
            dir,
            last_size: 0,
        })
    }

    /// Claims at least `count` positions: returns them and the marks they count from.
    /// A task's first claim is what its first batch needs, so tasks writing one batch each
    /// number their rows without gaps; later claims double in size (up to [`MAX_CLAIM`]),
    /// so a task writing many batches claims a few times, not once per batch.
    pub(crate) async fn claim(&mut self, count: u64) -> Result<(Range<u64>, HighWaterMarks)> {
        let size = count.max(self.last_size.saturating_mul(2).min(MAX_CLAIM));
        for _ in 0..MAX_TRIES {
            let (number, previous) = self.last_claim().await?;
            let claim = match previous {
                Some(previous) => Claim {
                    start: previous.end,
                    end: previous
                        .end
                        .checked_add(size)
                        .ok_or_else(|| self.exhausted())?,
                    high_water_marks: previous.high_water_marks,
                },
                None => Claim {
                    start: 0,
                    end: size,
                    high_water_marks: self.current_marks().await?,
                },
            };
            let bytes = serde_json::to_vec(&claim).map_err(|error| {
                Error::internal_invariant(format!("encoding an identity claim: {error}"))
            })?;
            if self
                .storage
                .put_if_absent(&self.claim_path(number), Bytes::from(bytes))
                .await?
            {
                self.last_size = size;
                return Ok((claim.start..claim.end, claim.high_water_marks));
            }
        }
        Err(Error::NotAllowed(format!(
            "{}: no identity claim could be taken after {MAX_TRIES} tries (too many tasks \
             claiming at once)",
            self.dir
        )))
    }

    /// The end of the last claim and the marks, or `None` when no task claimed anything.
    pub(crate) async fn summary(&self) -> Result<Option<ClaimsSummary>> {
        Ok(self.last_claim().await?.1.map(|claim| ClaimsSummary {
            end: claim.end,
            high_water_marks: claim.high_water_marks,
        }))
    }

    /// The new high-water marks of the identity columns `numbered` once the tasks are done:
    /// the values of the last position claimed; `None` when no task claimed anything. The
    /// marks the claims counted from must still be those of `schema` (the table's at the
    /// commit, of version `version`), else a concurrent commit numbered rows from them too:
    /// an [`Error::CommitConflict`] of kind [`ConflictKind::MetadataChanged`].
    pub(crate) async fn new_high_water_marks(
        &self,
        schema: &StructType,
        numbered: &[String],
        version: u64,
    ) -> Result<Option<Vec<(String, i64)>>> {
        let Some(summary) = self.summary().await? else {
            return Ok(None);
        };
        if summary.high_water_marks != identity_high_water_marks(schema) {
            return Err(Error::CommitConflict {
                kind: ConflictKind::MetadataChanged,
                version,
                table: self.storage.uri().to_string(),
                reason: "a concurrent commit generated identity values while the tasks ran: \
                         their rows were numbered from the same high-water mark"
                    .into(),
            });
        }
        let marks = claimed_high_water_marks(
            self.storage.uri(),
            schema,
            &summary.high_water_marks,
            summary.end,
            numbered,
        )?;
        Ok(Some(marks))
    }

    /// Deletes every claim of the write (one already gone is not an error).
    pub(crate) async fn remove(&self) -> Result<()> {
        for meta in self.storage.list_log_subdir(&self.dir).await? {
            self.storage.delete_log_file(&meta.location).await?;
        }
        self.storage.remove_empty_local_dir(&self.dir);
        Ok(())
    }

    /// The number the next claim takes, and the claim before it (`None`: none yet).
    async fn last_claim(&self) -> Result<(u64, Option<Claim>)> {
        let last = self
            .storage
            .list_log_subdir(&self.dir)
            .await?
            .iter()
            .filter_map(|meta| claim_number(meta.location.filename()?))
            .max();
        let Some(last) = last else {
            return Ok((0, None));
        };
        let path = self.claim_path(last);
        let bytes = self.storage.read(&path).await?;
        let claim: Claim =
            serde_json::from_slice(&bytes).map_err(|error| Error::CorruptLogFile {
                path: path.to_string(),
                reason: format!("not an identity claim: {error}"),
            })?;
        if claim.end < claim.start {
            return Err(Error::CorruptLogFile {
                path: path.to_string(),
                reason: format!("claims positions {} to {}", claim.start, claim.end),
            });
        }
        Ok((last + 1, Some(claim)))
    }

    /// The identity high-water marks of the table's newest metadata.
    async fn current_marks(&self) -> Result<HighWaterMarks> {
        let snapshot = Snapshot::load_lazy(&self.storage, SnapshotAt::Latest).await?;
        Ok(identity_high_water_marks(snapshot.schema()))
    }

    fn claim_path(&self, number: u64) -> Path {
        self.dir.clone().join(format!("{number:020}.claim"))
    }

    fn exhausted(&self) -> Error {
        Error::NotAllowed(format!(
            "{}: the identity claims ran past the positions a long can count",
            self.dir
        ))
    }
}

/// The number of a claim file name (`00000000000000000007.claim`).
fn claim_number(name: &str) -> Option<u64> {
    name.strip_suffix(".claim")?.parse().ok()
}
