//! What a merge does with one batch of target rows, and with the source rows no target row
//! matched: pure CPU work (run through `cpu::run`), returning the rows to write, the change
//! rows and the target rows touched.

use std::sync::Arc;

use arrow::compute::take_record_batch;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};

use super::clauses::{Action, Clause, Resolved};
use super::join::SourceIndex;
use crate::error::{Error, Result};
use crate::expr::evaluate_at;
use crate::scan::{ROW_COMMIT_VERSION_COLUMN, ROW_ID_COLUMN};
use crate::write::RowOrigin;

/// What the merge needs on every batch: the resolved clauses, the source and its index.
pub(super) struct Plan {
    pub resolved: Resolved,
    pub source: RecordBatch,
    pub index: SourceIndex,
    /// `current_timestamp()` of the statement.
    pub now_micros: i64,
    /// The rows carry `row_id` and `row_commit_version` after the table's columns.
    pub row_tracking: bool,
    /// The metadata the merge commits (the target schema evolved, with schema evolution):
    /// target files are read in its schema.
    pub metadata: crate::actions::Metadata,
    /// The table holds `table`'s name, for errors.
    pub table: String,
}

/// Rows of the target changed by one batch, and what to write for them.
#[derive(Debug, Default)]
pub(super) struct BatchChanges {
    /// Indexes (in the batch) of the target rows updated or deleted.
    pub touched: Vec<u32>,
    /// Source rows that matched a target row of the batch.
    pub matched_sources: Vec<u32>,
    /// Rows to write, updated ([`RowOrigin::Existing`]): the table's columns, then `row_id`
    /// and `row_commit_version` when tracked.
    pub written: Vec<(RecordBatch, RowOrigin)>,
    /// Rows inserted (in the layout of `written`), with the indexes of the identity columns
    /// whose values the table generates for them (placeholders here): written as data and
    /// as `insert` change rows with the same values (`RowWriter::write_inserted`).
    pub inserted: Vec<(RecordBatch, Vec<usize>)>,
    /// Change rows with their `_change_type`.
    pub changes: Vec<(RecordBatch, &'static str)>,
    pub counts: Counts,
}

/// Row counts, named after Spark's metrics.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    pub matched_updated: u64,
    pub matched_deleted: u64,
    pub not_matched_by_source_updated: u64,
    pub not_matched_by_source_deleted: u64,
    pub inserted: u64,
}

impl Counts {
    pub(super) fn add(&mut self, other: Counts) {
        self.matched_updated += other.matched_updated;
        self.matched_deleted += other.matched_deleted;
        self.not_matched_by_source_updated += other.not_matched_by_source_updated;
        self.not_matched_by_source_deleted += other.not_matched_by_source_deleted;
        self.inserted += other.inserted;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Matched,
    NotMatchedBySource,
}

impl Plan {
    /// Merges one batch of target rows (every row of a file, in physical order; `live` false
    /// for rows deleted before): joins it with the source, checks that no target row
    /// matches more than one source row (unless allowed), and applies the first clause whose
    /// condition holds to each matched row and, with `WHEN NOT MATCHED BY SOURCE` clauses,
    /// to each unmatched live row.
    pub(super) fn merge_batch(&self, batch: &RecordBatch, live: &[bool]) -> Result<BatchChanges> {
        let sides = &self.resolved.sides;
        let mut changes = BatchChanges::default();
        let probe = sides.join(Some(batch), None, batch.num_rows())?;
        let pairs = self.index.probe(&probe, live)?;
        let (targets, sources) = self.matching_pairs(batch, pairs)?;
        changes.matched_sources = sources.clone();
        let mut matches = vec![0u32; batch.num_rows()];
        for target in &targets {
            matches[*target as usize] += 1;
        }
        if !self.resolved.allows_multiple_matches() {
            if let Some(row) = matches.iter().position(|m| *m > 1) {
                return Err(self.multiple_matches(batch, row));
            }
        }
        if !self.resolved.matched.is_empty() && !targets.is_empty() {
            let (targets, sources) = first_per_target(&targets, &sources);
            let target_rows = take(batch, &targets)?;
            let source_rows = take(&self.source, &sources)?;
            let joined = sides.join(Some(&target_rows), Some(&source_rows), targets.len())?;
            self.apply(
                &self.resolved.matched,
                Kind::Matched,
                &target_rows,
                &joined,
                &targets,
                &mut changes,
            )?;
        }
        if !self.resolved.not_matched_by_source.is_empty() {
            let unmatched: Vec<u32> = (0..batch.num_rows())
                .filter(|row| live[*row] && matches[*row] == 0)
                .map(|row| row as u32)
                .collect();
            if !unmatched.is_empty() {
                let target_rows = take(batch, &unmatched)?;
                let joined = sides.join(Some(&target_rows), None, unmatched.len())?;
                let clauses = &self.resolved.not_matched_by_source;
                self.apply(
                    clauses,
                    Kind::NotMatchedBySource,
                    &target_rows,
                    &joined,
                    &unmatched,
                    &mut changes,
                )?;
            }
        }
        changes.touched.sort_unstable();
        Ok(changes)
    }

    /// The rows of `unmatched` (source rows no target row matched) that a `WHEN NOT MATCHED`
    /// clause inserts, with their values and the identity columns to number.
    pub(super) fn insert(&self, unmatched: &[u32]) -> Result<BatchChanges> {
        let mut changes = BatchChanges::default();
        if unmatched.is_empty() || self.resolved.not_matched.is_empty() {
            return Ok(changes);
        }
        let source_rows = take(&self.source, unmatched)?;
        let joined = self
            .resolved
            .sides
            .join(None, Some(&source_rows), unmatched.len())?;
        let chosen = choose(&self.resolved.not_matched, &joined, self.now_micros)?;
        for (number, clause) in self.resolved.not_matched.iter().enumerate() {
            let Action::Insert(values) = &clause.action else {
                continue;
            };
            let rows = rows_choosing(&chosen, number);
            if rows.is_empty() {
                continue;
            }
            let joined = take(&joined, &rows)?;
            let mut columns = Vec::with_capacity(values.len());
            let mut generated = Vec::new();
            for (index, value) in values.iter().enumerate() {
                let Some(value) = value else {
                    generated.push(index);
                    let field = self.resolved.sides.target.field(index);
                    columns.push(arrow_array::new_null_array(field.data_type(), rows.len()));
                    continue;
                };
                columns.push(self.resolved.sides.value_of(
                    index,
                    value,
                    &joined,
                    self.now_micros,
                )?);
            }
            let inserted = self.table_rows(columns, None)?;
            changes.counts.inserted += inserted.num_rows() as u64;
            changes.inserted.push((inserted, generated));
        }
        Ok(changes)
    }

    /// The candidate pairs the whole merge condition holds for, as (target rows, source
    /// rows).
    fn matching_pairs(
        &self,
        batch: &RecordBatch,
        pairs: Vec<(u32, u32)>,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        if pairs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let (targets, sources): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
        let target_rows = take(batch, &targets)?;
        let source_rows = take(&self.source, &sources)?;
        let joined =
            self.resolved
                .sides
                .join(Some(&target_rows), Some(&source_rows), targets.len())?;
        let holds = evaluate_at(&self.resolved.on, &joined, self.now_micros)?;
        let kept = |list: &[u32]| -> Vec<u32> {
            list.iter()
                .zip(holds.values().iter())
                .filter(|(_, hit)| *hit)
                .map(|(row, _)| *row)
                .collect()
        };
        Ok((kept(&targets), kept(&sources)))
    }

    /// Applies `clauses` to the `joined` rows (`target_rows` are their target rows, at
    /// `positions` of the batch): deletes and updates, with their change rows.
    fn apply(
        &self,
        clauses: &[Clause],
        kind: Kind,
        target_rows: &RecordBatch,
        joined: &RecordBatch,
        positions: &[u32],
        changes: &mut BatchChanges,
    ) -> Result<()> {
        let chosen = choose(clauses, joined, self.now_micros)?;
        for (number, clause) in clauses.iter().enumerate() {
            let rows = rows_choosing(&chosen, number);
            if rows.is_empty() {
                continue;
            }
            changes
                .touched
                .extend(rows.iter().map(|row| positions[*row as usize]));
            let before = take(target_rows, &rows)?;
            let count = rows.len() as u64;
            match &clause.action {
                Action::Delete => {
                    changes.changes.push((before, "delete"));
                    match kind {
                        Kind::Matched => changes.counts.matched_deleted += count,
                        Kind::NotMatchedBySource => {
                            changes.counts.not_matched_by_source_deleted += count
                        }
                    }
                }
                Action::Update(values) => {
                    let joined = take(joined, &rows)?;
                    let columns =
                        self.resolved
                            .sides
                            .apply(values, &before, &joined, self.now_micros)?;
                    let after = self.table_rows(columns, Some(&before))?;
                    changes.changes.push((before, "update_preimage"));
                    changes.changes.push((after.clone(), "update_postimage"));
                    changes.written.push((after, RowOrigin::Existing));
                    match kind {
                        Kind::Matched => changes.counts.matched_updated += count,
                        Kind::NotMatchedBySource => {
                            changes.counts.not_matched_by_source_updated += count
                        }
                    }
                }
                Action::Insert(_) => {}
            }
        }
        Ok(())
    }

    /// A batch of the table's `columns`, then (with row tracking) the row ids of `before`
    /// (NULL for new rows: fresh ids) and NULL row commit versions (this commit's).
    fn table_rows(
        &self,
        columns: Vec<ArrayRef>,
        before: Option<&RecordBatch>,
    ) -> Result<RecordBatch> {
        let target = &self.resolved.sides.target;
        let rows = columns.first().map_or(0, |c| c.len());
        let mut fields: Vec<Field> = target
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| {
                f.as_ref()
                    .clone()
                    .with_data_type(c.data_type().clone())
                    .with_nullable(true)
            })
            .collect();
        let mut columns = columns;
        if self.row_tracking {
            let ids = match before.and_then(|b| b.column_by_name(ROW_ID_COLUMN)) {
                Some(ids) => ids.clone(),
                None => arrow_array::new_null_array(&DataType::Int64, rows),
            };
            fields.push(Field::new(ROW_ID_COLUMN, DataType::Int64, true));
            columns.push(ids);
            fields.push(Field::new(ROW_COMMIT_VERSION_COLUMN, DataType::Int64, true));
            columns.push(arrow_array::new_null_array(&DataType::Int64, rows));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|error| Error::arrow("assembling merged rows", error))
    }

    fn multiple_matches(&self, batch: &RecordBatch, row: usize) -> Error {
        let shown = batch.slice(row, 1);
        let values: Vec<String> = self
            .resolved
            .sides
            .target
            .fields()
            .iter()
            .zip(shown.columns())
            .map(|(f, c)| {
                let text = arrow::util::display::array_value_to_string(c, 0)
                    .unwrap_or_else(|_| "?".into());
                format!("{}={text}", f.name())
            })
            .collect();
        Error::MergeMultipleMatch {
            table: self.table.clone(),
            reason: format!(
                "the target row ({}) matched more than one source row; a merge may update \
                 or delete a target row with one source row only \
                 (DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE): make the source \
                 rows unique per key, or narrow the merge condition",
                values.join(", ")
            ),
        }
    }
}

/// For each row of `joined`, the number of the first clause whose condition holds
/// (`current_timestamp()` is `now_micros`).
fn choose(clauses: &[Clause], joined: &RecordBatch, now_micros: i64) -> Result<Vec<Option<usize>>> {
    let mut chosen: Vec<Option<usize>> = vec![None; joined.num_rows()];
    for (number, clause) in clauses.iter().enumerate() {
        let holds = match &clause.condition {
            Some(condition) => evaluate_at(condition, joined, now_micros)?,
            None => BooleanArray::from(vec![true; joined.num_rows()]),
        };
        for (row, slot) in chosen.iter_mut().enumerate() {
            if slot.is_none() && holds.value(row) {
                *slot = Some(number);
            }
        }
    }
    Ok(chosen)
}

fn rows_choosing(chosen: &[Option<usize>], number: usize) -> Vec<u32> {
    chosen
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == Some(number))
        .map(|(row, _)| row as u32)
        .collect()
}

/// The first pair of each target row (pairs come in target order): where several source
/// rows match a target row and that is allowed, the row is deleted once.
fn first_per_target(targets: &[u32], sources: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut kept = (Vec::new(), Vec::new());
    for (target, source) in targets.iter().zip(sources) {
        if kept.0.last() != Some(target) {
            kept.0.push(*target);
            kept.1.push(*source);
        }
    }
    kept
}

fn take(batch: &RecordBatch, rows: &[u32]) -> Result<RecordBatch> {
    take_record_batch(batch, &UInt32Array::from(rows.to_vec()))
        .map_err(|error| Error::arrow("selecting merge rows", error))
}
