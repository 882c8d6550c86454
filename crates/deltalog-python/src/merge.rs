//! Merging Arrow data into the table at a location: `merge` of the core, wrapped by
//! `deltalog.DeltaTable.merge` (`python/deltalog/_merge.py`, the `TableMerger` builder).

use deltalog_core::expr::{parse_value_sql, ValueExpr};
use deltalog_core::ops::{
    MatchedAction, MergeClauses, MergeOptions, NotMatchedAction, NotMatchedBySourceAction,
};
use deltalog_core::{parse_sql, Error, Table};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::arrow_import::PyArrowInput;
use crate::convert::{PyCommitInfo, PyStorageOptions};
use crate::dml::writer_options;
use crate::errors::{failure_to_py_err, to_py_err};
use crate::results::RawCommit;
use crate::runtime::wait_for_future;

/// One `WHEN` clause as Python gives it: its kind, its condition (SQL text) and its
/// assignments (column, SQL value text).
pub type ClauseTuple = (ClauseKind, Option<String>, Vec<(String, String)>);

/// The kind of a `WHEN` clause: which rows it applies to and what it does to them. Python
/// names it in snake case (`"matched_update"`, ..., `"not_matched_by_source_delete"`;
/// `MergeClauseKind` in `_core.pyi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClauseKind {
    MatchedUpdate,
    MatchedUpdateAll,
    MatchedDelete,
    NotMatchedInsert,
    NotMatchedInsertAll,
    NotMatchedBySourceUpdate,
    NotMatchedBySourceDelete,
}

impl ClauseKind {
    const ALL: [(&'static str, ClauseKind); 7] = [
        ("matched_update", ClauseKind::MatchedUpdate),
        ("matched_update_all", ClauseKind::MatchedUpdateAll),
        ("matched_delete", ClauseKind::MatchedDelete),
        ("not_matched_insert", ClauseKind::NotMatchedInsert),
        ("not_matched_insert_all", ClauseKind::NotMatchedInsertAll),
        (
            "not_matched_by_source_update",
            ClauseKind::NotMatchedBySourceUpdate,
        ),
        (
            "not_matched_by_source_delete",
            ClauseKind::NotMatchedBySourceDelete,
        ),
    ];

    fn parse(name: &str) -> Result<ClauseKind, Error> {
        let known = ClauseKind::ALL.iter().find(|(known, _)| *known == name);
        known
            .map(|(_, kind)| *kind)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown merge clause kind '{name}'")))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for ClauseKind {
    type Error = PyErr;

    fn extract(name: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let text = name.cast::<PyString>()?;
        ClauseKind::parse(text.to_str()?).map_err(|error| to_py_err(name.py(), error))
    }
}

/// Merges `source` into the table at `uri` on the SQL condition `on` with `clauses`, in
/// order, and commits (see [`merge`]).
#[pyfunction]
#[pyo3(signature = (uri, source, on, clauses, source_alias, target_alias, target_file_size=None, commit_info=None, storage_options=None, merge_schema=false))]
#[allow(clippy::too_many_arguments)]
pub fn merge_rows(
    py: Python<'_>,
    uri: String,
    source: PyArrowInput,
    on: &str,
    clauses: Vec<ClauseTuple>,
    source_alias: String,
    target_alias: String,
    target_file_size: Option<u64>,
    commit_info: Option<PyCommitInfo>,
    storage_options: Option<PyStorageOptions>,
    merge_schema: bool,
) -> PyResult<RawCommit> {
    let prepared = (|| {
        let on = parse_sql(on)?;
        let clauses = merge_clauses(clauses)?;
        let options = MergeOptions {
            source_alias,
            target_alias,
            writer: writer_options(target_file_size),
            commit_info: PyCommitInfo::or_empty(commit_info),
            merge_schema,
        };
        Ok::<_, Error>((on, clauses, options))
    })();
    let (on, clauses, options) = prepared.map_err(|error| to_py_err(py, error))?;
    let schema = source.schema.clone();
    let batches = source.collect().map_err(|error| to_py_err(py, error))?;
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let outcome = wait_for_future(py, move || async move {
        Ok(table.merge(batches, schema, on, clauses, options).await)
    })?;
    outcome
        .map(RawCommit::from)
        .map_err(|failure| failure_to_py_err(py, failure))
}

fn merge_clauses(tuples: Vec<ClauseTuple>) -> Result<MergeClauses, Error> {
    let mut clauses = MergeClauses::default();
    for (kind, predicate, assignments) in tuples {
        let condition = predicate.as_deref().map(parse_sql).transpose()?;
        let set = assignments_of(assignments)?;
        match kind {
            ClauseKind::MatchedUpdate => clauses
                .matched
                .push((condition, MatchedAction::Update(set))),
            ClauseKind::MatchedUpdateAll => {
                clauses.matched.push((condition, MatchedAction::UpdateAll))
            }
            ClauseKind::MatchedDelete => clauses.matched.push((condition, MatchedAction::Delete)),
            ClauseKind::NotMatchedInsert => clauses
                .not_matched
                .push((condition, NotMatchedAction::Insert(set))),
            ClauseKind::NotMatchedInsertAll => clauses
                .not_matched
                .push((condition, NotMatchedAction::InsertAll)),
            ClauseKind::NotMatchedBySourceUpdate => clauses
                .not_matched_by_source
                .push((condition, NotMatchedBySourceAction::Update(set))),
            ClauseKind::NotMatchedBySourceDelete => clauses
                .not_matched_by_source
                .push((condition, NotMatchedBySourceAction::Delete)),
        }
    }
    Ok(clauses)
}

fn assignments_of(pairs: Vec<(String, String)>) -> Result<Vec<(String, ValueExpr)>, Error> {
    pairs
        .into_iter()
        .map(|(column, text)| parse_value_sql(&text).map(|expr| (column, expr)))
        .collect()
}
