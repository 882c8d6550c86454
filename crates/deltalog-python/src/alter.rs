//! `RawAlter`: the table alterations of `deltalog.Alter` (core [`alter_snapshot`]), each one
//! commit on top of the snapshot it was built from.

use std::collections::BTreeMap;

use std::str::FromStr;

use deltalog_core::ops::{alter_snapshot, Alteration, ColumnChange, ColumnPosition, NewColumn};
use deltalog_core::schema::PrimitiveType;
use deltalog_core::Error;
use deltalog_core::Snapshot;
use pyo3::prelude::*;

use crate::convert::PySchemaInput;
use crate::results::RawCommit;
use crate::runtime::wait_for_future;
use crate::snapshot::RawSnapshot;

/// Alterations of the table of one snapshot.
#[pyclass(frozen, module = "deltalog._core")]
pub struct RawAlter {
    snapshot: Snapshot,
}

#[pymethods]
impl RawAlter {
    /// Alterations committed on top of `snapshot`.
    #[new]
    fn new(snapshot: &RawSnapshot) -> PyResult<Self> {
        Ok(RawAlter {
            snapshot: snapshot.snapshot(),
        })
    }

    /// `SET TBLPROPERTIES` (`comment` sets the description).
    fn set_properties(
        &self,
        py: Python<'_>,
        properties: BTreeMap<String, String>,
    ) -> PyResult<RawCommit> {
        self.apply(py, Alteration::SetProperties(properties))
    }

    /// `UNSET TBLPROPERTIES [IF EXISTS]`.
    #[pyo3(signature = (keys, if_exists=false))]
    fn unset_properties(
        &self,
        py: Python<'_>,
        keys: Vec<String>,
        if_exists: bool,
    ) -> PyResult<RawCommit> {
        self.apply(py, Alteration::UnsetProperties { keys, if_exists })
    }

    /// `ADD COLUMNS`: the fields of `fields`, at the top level or inside the struct `parent`.
    #[pyo3(signature = (fields, parent=None))]
    fn add_columns(
        &self,
        py: Python<'_>,
        fields: PySchemaInput,
        parent: Option<String>,
    ) -> PyResult<RawCommit> {
        let columns = fields
            .0
            .fields
            .into_iter()
            .map(|field| NewColumn {
                parent: parent.clone(),
                field,
            })
            .collect();
        self.apply(py, Alteration::AddColumns(columns))
    }

    /// `RENAME COLUMN source TO name`.
    fn rename_column(&self, py: Python<'_>, source: String, name: String) -> PyResult<RawCommit> {
        let alteration = Alteration::RenameColumn {
            from: source,
            to: name,
        };
        self.apply(py, alteration)
    }

    /// `DROP COLUMNS [IF EXISTS]`.
    #[pyo3(signature = (columns, if_exists=false))]
    fn drop_columns(
        &self,
        py: Python<'_>,
        columns: Vec<String>,
        if_exists: bool,
    ) -> PyResult<RawCommit> {
        self.apply(py, Alteration::DropColumns { columns, if_exists })
    }

    /// `ADD CONSTRAINT name CHECK (expression)`, checked against the existing rows first.
    fn add_constraint(
        &self,
        py: Python<'_>,
        name: String,
        expression: String,
    ) -> PyResult<RawCommit> {
        self.apply(py, Alteration::AddConstraint { name, expression })
    }

    /// `DROP CONSTRAINT [IF EXISTS] name`.
    #[pyo3(signature = (name, if_exists=false))]
    fn drop_constraint(
        &self,
        py: Python<'_>,
        name: String,
        if_exists: bool,
    ) -> PyResult<RawCommit> {
        self.apply(py, Alteration::DropConstraint { name, if_exists })
    }

    /// Adds the table feature `name` to the protocol.
    fn add_feature(&self, py: Python<'_>, name: String) -> PyResult<RawCommit> {
        self.apply(py, Alteration::AddFeature(name))
    }

    /// Sets the table description.
    fn set_description(&self, py: Python<'_>, text: String) -> PyResult<RawCommit> {
        self.apply(py, Alteration::SetDescription(text))
    }

    /// Changes the column at `column` (`CHANGE COLUMN`): `data_type` (a Delta type name, a
    /// widening), `comment`, `drop_not_null`, and its position (`first`, or `after` a
    /// sibling).
    #[pyo3(signature = (column, data_type=None, comment=None, drop_not_null=false, first=false, after=None))]
    #[allow(clippy::too_many_arguments)]
    fn change_column(
        &self,
        py: Python<'_>,
        column: String,
        data_type: Option<String>,
        comment: Option<String>,
        drop_not_null: bool,
        first: bool,
        after: Option<String>,
    ) -> PyResult<RawCommit> {
        let data_type = data_type
            .map(|name| {
                PrimitiveType::from_str(&name).map_err(|reason| {
                    let message = format!("CHANGE COLUMN {column}: {reason}");
                    crate::errors::to_py_err(py, Error::InvalidArgument(message))
                })
            })
            .transpose()?;
        let position = match (first, after) {
            (true, Some(_)) => {
                let message = "give first or after, not both".to_string();
                return Err(crate::errors::to_py_err(
                    py,
                    Error::InvalidArgument(message),
                ));
            }
            (true, None) => Some(ColumnPosition::First),
            (false, Some(sibling)) => Some(ColumnPosition::After(sibling)),
            (false, None) => None,
        };
        let change = ColumnChange {
            column,
            data_type,
            comment,
            drop_not_null,
            position,
        };
        self.apply(py, Alteration::ChangeColumn(change))
    }

    /// Sets the clustering columns (`CLUSTER BY`; empty: `CLUSTER BY NONE`).
    fn cluster_by(&self, py: Python<'_>, columns: Vec<String>) -> PyResult<RawCommit> {
        self.apply(py, Alteration::ClusterBy(columns))
    }

    /// Drops a table feature (`DROP FEATURE name [TRUNCATE HISTORY]`); the downgrade commit.
    #[pyo3(signature = (name, truncate_history=false))]
    fn drop_feature(
        &self,
        py: Python<'_>,
        name: String,
        truncate_history: bool,
    ) -> PyResult<RawCommit> {
        self.apply(
            py,
            Alteration::DropFeature {
                name,
                truncate_history,
            },
        )
    }
}

impl RawAlter {
    fn apply(&self, py: Python<'_>, alteration: Alteration) -> PyResult<RawCommit> {
        let snapshot = &self.snapshot;
        let done = wait_for_future(py, || alter_snapshot(snapshot, alteration))?;
        Ok(RawCommit::from(done))
    }
}
