//! Arguments given from Python, as core values: each newtype converts itself
//! (`FromPyObject`), so a `#[pymethods]` body receives core values ready to use. Only
//! conversion happens here; parsing and meaning live in `deltalog-core`.
//!
//! Filters come as a SQL-like string, or pyarrow's DNF form (a list of `(column, op, value)`
//! tuples, or a list of such lists for OR).

use std::collections::HashMap;
use std::str::FromStr;

use arrow::datatypes::Schema as ArrowSchema;
use arrow::ffi::FFI_ArrowSchema;
use deltalog_core::expr::{from_dnf, DnfLiteral};
use deltalog_core::ops::{struct_type_from_arrow, SchemaMode};
use deltalog_core::scalar::{Scalar, SessionTimeZone};
use deltalog_core::schema::{parse_schema, PrimitiveType};
use deltalog_core::{
    parse_sql, Expr, Storage, StructField, StructType, WriteMode, WriteTableOptions, WriterOptions,
};
use deltalog_core::{Error, SnapshotAt};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyCapsule, PyDate, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyMapping,
    PySet, PyString, PyTuple,
};
use serde::Serialize;
use serde_json::Value;

use crate::errors::{internal_error, to_py_err};

/// A filter argument: `None`, SQL-like text or the DNF form; `.0` is the core filter.
pub struct PyFilter(pub Option<Expr>);

impl<'a, 'py> FromPyObject<'a, 'py> for PyFilter {
    type Error = PyErr;

    fn extract(filter: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if filter.is_none() {
            return Ok(PyFilter(None));
        }
        let expr = if let Ok(text) = filter.cast::<PyString>() {
            parse_sql(text.to_str()?)
        } else {
            from_dnf(dnf_from_py(&filter)?)
        };
        expr.map(|expr| PyFilter(Some(expr)))
            .map_err(|error| to_py_err(filter.py(), error))
    }
}

impl PyFilter {
    /// The core filter of an optional filter argument.
    pub fn expr(filter: Option<PyFilter>) -> Option<Expr> {
        filter.and_then(|filter| filter.0)
    }
}

/// A session time zone argument: its name (`UTC`, `+05:30`, `Europe/Paris`), UTC for `None`.
pub struct PyTimeZone(pub SessionTimeZone);

impl<'a, 'py> FromPyObject<'a, 'py> for PyTimeZone {
    type Error = PyErr;

    fn extract(name: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if name.is_none() {
            return Ok(PyTimeZone(SessionTimeZone::utc()));
        }
        let text = name.cast::<PyString>()?;
        SessionTimeZone::parse(text.to_str()?)
            .map(PyTimeZone)
            .map_err(|error| to_py_err(name.py(), error))
    }
}

impl PyTimeZone {
    /// The zone of an optional time zone argument, UTC when it is absent.
    pub fn or_utc(zone: Option<PyTimeZone>) -> SessionTimeZone {
        zone.map_or_else(SessionTimeZone::utc, |zone| zone.0)
    }
}

/// Storage options: a mapping of str to str.
pub struct PyStorageOptions(pub HashMap<String, String>);

impl<'a, 'py> FromPyObject<'a, 'py> for PyStorageOptions {
    type Error = PyErr;

    fn extract(options: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        options.extract().map(PyStorageOptions)
    }
}

impl PyStorageOptions {
    /// The options of an optional argument, none when it is absent.
    pub fn or_empty(options: Option<PyStorageOptions>) -> HashMap<String, String> {
        options.map(|options| options.0).unwrap_or_default()
    }

    /// The store at `uri` with these options (which need not hold a table yet).
    pub fn storage(
        py: Python<'_>,
        uri: &str,
        options: Option<PyStorageOptions>,
    ) -> PyResult<Storage> {
        Storage::open(uri, &Self::or_empty(options)).map_err(|error| to_py_err(py, error))
    }
}

/// Extra fields for a commit's `commitInfo` (the `commit_info` argument of every write): a
/// mapping of JSON values, encoded as Python's `json.dumps` encodes it.
#[derive(Default)]
pub struct PyCommitInfo(pub serde_json::Map<String, Value>);

impl<'a, 'py> FromPyObject<'a, 'py> for PyCommitInfo {
    type Error = PyErr;

    fn extract(info: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = info.py();
        let mapping = py.get_type::<PyDict>().call1((info,))?;
        let text = py.import("json")?.call_method1("dumps", (mapping,))?;
        serde_json::from_str(text.extract::<&str>()?)
            .map(PyCommitInfo)
            .map_err(|error| {
                let message = format!("commit_info must be a JSON object: {error}");
                to_py_err(py, Error::InvalidArgument(message))
            })
    }
}

impl PyCommitInfo {
    /// The fields of an optional argument, none when it is absent.
    pub fn or_empty(info: Option<PyCommitInfo>) -> serde_json::Map<String, Value> {
        info.unwrap_or_default().0
    }
}

/// The partition columns of a conversion: a mapping of column name to Delta type name
/// (`{"year": "integer"}`), or anything [`PySchemaInput`] takes.
pub struct PyPartitionColumns(pub StructType);

impl<'a, 'py> FromPyObject<'a, 'py> for PyPartitionColumns {
    type Error = PyErr;

    fn extract(columns: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = columns.py();
        let Ok(mapping) = columns.cast::<PyMapping>() else {
            return columns
                .extract::<PySchemaInput>()
                .map(|schema| PyPartitionColumns(schema.0));
        };
        let mut fields = Vec::new();
        for item in mapping.items()?.iter() {
            let Ok((name, kind)) = item.extract::<(String, String)>() else {
                let message = format!(
                    "partition_by must map column names to Delta type names (str), got {item}"
                );
                return Err(to_py_err(py, Error::InvalidArgument(message)));
            };
            let primitive = PrimitiveType::from_str(&kind).map_err(|reason| {
                let message = format!("partition_by column `{name}`: {reason}");
                to_py_err(py, Error::InvalidArgument(message))
            })?;
            fields.push(StructField::new(name, primitive, true));
        }
        Ok(PyPartitionColumns(StructType::new(fields)))
    }
}

/// A table schema argument: Delta schema JSON text, or any object with
/// `__arrow_c_schema__` (a pyarrow schema, a polars schema, ...) converted by the core.
pub struct PySchemaInput(pub StructType);

impl<'a, 'py> FromPyObject<'a, 'py> for PySchemaInput {
    type Error = PyErr;

    fn extract(schema: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = schema.py();
        let converted = if let Ok(text) = schema.cast::<PyString>() {
            parse_schema(text.to_str()?)
        } else if schema.hasattr("__arrow_c_schema__")? {
            let capsule = schema.call_method0("__arrow_c_schema__")?;
            let pointer = capsule
                .cast::<PyCapsule>()?
                .pointer_checked(Some(c"arrow_schema"))?;
            // SAFETY: a capsule named "arrow_schema" holds a valid `ArrowSchema` (Arrow
            // PyCapsule interface); it is only borrowed here.
            let exported = unsafe { pointer.cast::<FFI_ArrowSchema>().as_ref() };
            ArrowSchema::try_from(exported)
                .map_err(|source| Error::arrow("importing the Arrow schema", source))
                .and_then(|arrow| struct_type_from_arrow(&arrow))
        } else {
            Err(Error::InvalidArgument(
                "schema must be Delta schema JSON text or an Arrow schema (__arrow_c_schema__)"
                    .into(),
            ))
        };
        converted
            .map(PySchemaInput)
            .map_err(|error| to_py_err(py, error))
    }
}

/// The arguments of a write, as the core's [`WriteTableOptions`].
#[allow(clippy::too_many_arguments)]
pub fn write_options(
    mode: &str,
    partition_by: Option<Vec<String>>,
    predicate: Option<Expr>,
    schema_mode: Option<&str>,
    configuration: Option<HashMap<String, String>>,
    target_file_size: Option<u64>,
    app_id: Option<String>,
    app_version: Option<i64>,
    commit_info: Option<PyCommitInfo>,
) -> Result<WriteTableOptions, Error> {
    let app = match (app_id, app_version) {
        (Some(id), Some(version)) => Some((id, version)),
        (None, None) => None,
        _ => {
            return Err(Error::InvalidArgument(
                "app_id and app_version go together".into(),
            ))
        }
    };
    Ok(WriteTableOptions {
        mode: WriteMode::parse(mode)?,
        partition_by,
        predicate,
        schema_mode: schema_mode.map(SchemaMode::parse).transpose()?,
        configuration: configuration.unwrap_or_default(),
        writer: WriterOptions {
            target_file_size,
            ..WriterOptions::default()
        },
        app_version: app,
        commit_info: PyCommitInfo::or_empty(commit_info),
        ..WriteTableOptions::default()
    })
}

/// Which snapshot a `version` and a `timestamp_ms` argument name (the latest when neither
/// is given); both at once is the caller's mistake.
pub struct PySnapshotAt(pub SnapshotAt);

impl PySnapshotAt {
    /// The snapshot `version` or `timestamp_ms` names.
    pub fn new(py: Python<'_>, version: Option<u64>, timestamp_ms: Option<i64>) -> PyResult<Self> {
        snapshot_at(version, timestamp_ms)
            .map(PySnapshotAt)
            .map_err(|error| to_py_err(py, error))
    }
}

/// A core value (a schema field, say) as the Python value of its JSON form: dicts, lists,
/// strings, numbers, booleans and `None`, built directly from the Rust value.
pub fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(value)
        .map_err(|error| internal_error(py, &format!("cannot convert a core value: {error}")))?;
    json_to_py(py, &value)
}

fn json_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(signed), _) => signed.into_pyobject(py)?.into_any(),
            (None, Some(unsigned)) => unsigned.into_pyobject(py)?.into_any(),
            (None, None) => number
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any(),
        },
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(entries) => {
            let dict = PyDict::new(py);
            for (key, item) in entries {
                dict.set_item(key, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Which snapshot the arguments name; both at once is the caller's mistake.
fn snapshot_at(version: Option<u64>, timestamp_ms: Option<i64>) -> Result<SnapshotAt, Error> {
    match (version, timestamp_ms) {
        (None, None) => Ok(SnapshotAt::Latest),
        (Some(version), None) => Ok(SnapshotAt::Version(version)),
        (None, Some(timestamp_ms)) => Ok(SnapshotAt::Timestamp(timestamp_ms)),
        (Some(_), Some(_)) => Err(Error::InvalidArgument(
            "give a version or a timestamp, not both".to_string(),
        )),
    }
}

fn dnf_from_py(filter: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<(String, String, DnfLiteral)>>> {
    let items = sequence(filter, "filter")?;
    let is_single_conjunction = items
        .first()
        .is_some_and(|first| first.cast::<PyTuple>().is_ok() || is_predicate(first));
    if is_single_conjunction {
        return Ok(vec![conjunction(&items)?]);
    }
    items
        .iter()
        .map(|item| conjunction(&sequence(item, "filter disjunct")?))
        .collect()
}

fn is_predicate(item: &Bound<'_, PyAny>) -> bool {
    sequence(item, "")
        .ok()
        .is_some_and(|parts| parts.len() == 3 && parts[0].cast::<PyString>().is_ok())
}

fn conjunction(items: &[Bound<'_, PyAny>]) -> PyResult<Vec<(String, String, DnfLiteral)>> {
    items
        .iter()
        .map(|item| {
            let parts = sequence(item, "filter predicate")?;
            let [column, op, value] = parts.as_slice() else {
                return Err(invalid(format!(
                    "a filter predicate is a (column, op, value) tuple, got {item}"
                )));
            };
            Ok((column.extract()?, op.extract()?, literal(value)?))
        })
        .collect()
}

fn literal(value: &Bound<'_, PyAny>) -> PyResult<DnfLiteral> {
    let is_collection = value.cast::<PyList>().is_ok()
        || value.cast::<PyTuple>().is_ok()
        || value.cast::<PySet>().is_ok();
    if is_collection {
        let items = value
            .try_iter()?
            .map(|item| scalar(&item?))
            .collect::<PyResult<_>>()?;
        return Ok(DnfLiteral::List(items));
    }
    scalar(value).map(DnfLiteral::Scalar)
}

/// A Python value as a core literal. A naive `datetime` is taken as UTC, as elsewhere in the
/// API; `Decimal` keeps its exact digits.
fn scalar(value: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if value.is_none() {
        return Ok(Scalar::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Scalar::Boolean(flag.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        return Ok(Scalar::Int64(value.extract()?));
    }
    if value.cast::<PyFloat>().is_ok() {
        return Ok(Scalar::Float64(value.extract()?));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Scalar::Utf8(text.to_str()?.to_string()));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Scalar::Binary(bytes.as_bytes().to_vec()));
    }
    if value.cast::<PyDateTime>().is_ok() {
        return Ok(Scalar::Timestamp(timestamp_micros(value)?));
    }
    if value.cast::<PyDate>().is_ok() {
        let ordinal: i64 = value.call_method0("toordinal")?.extract()?;
        let days = i32::try_from(ordinal - UNIX_EPOCH_ORDINAL)
            .map_err(|_| invalid("date out of range".into()))?;
        return Ok(Scalar::Date(days));
    }
    if value.get_type().name()? == "Decimal" {
        let text = value.str()?.to_string();
        return decimal(&text).ok_or_else(|| invalid(format!("unsupported Decimal {text}")));
    }
    Err(invalid(format!(
        "unsupported filter value {value} of type {}",
        value.get_type().name()?
    )))
}

/// `date(1970, 1, 1).toordinal()`.
const UNIX_EPOCH_ORDINAL: i64 = 719_163;

/// Microseconds since the epoch of a datetime (a naive one is read as UTC), exactly.
fn timestamp_micros(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    let py = value.py();
    let datetime = py.import("datetime")?;
    let utc = datetime.getattr("timezone")?.getattr("utc")?;
    let aware = if value.getattr("tzinfo")?.is_none() {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("tzinfo", &utc)?;
        value.call_method("replace", (), Some(&kwargs))?
    } else {
        value.clone()
    };
    let epoch = datetime
        .getattr("datetime")?
        .call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
    let delta = aware.call_method1("__sub__", (epoch,))?;
    let days: i64 = delta.getattr("days")?.extract()?;
    let seconds: i64 = delta.getattr("seconds")?.extract()?;
    let micros: i64 = delta.getattr("microseconds")?.extract()?;
    Ok((days * 86_400 + seconds) * 1_000_000 + micros)
}

/// A decimal literal from its text (`-12.340`, `1E+2` is refused).
fn decimal(text: &str) -> Option<Scalar> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let all: String = format!("{whole}{fraction}");
    let value: i128 = all.parse().ok()?;
    let scale = u8::try_from(fraction.len()).ok()?;
    Some(Scalar::Decimal {
        value: if negative { -value } else { value },
        scale,
    })
}

fn sequence<'py>(value: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if value.cast::<PyString>().is_ok()
        || (value.cast::<PyList>().is_err() && value.cast::<PyTuple>().is_err())
    {
        return Err(invalid(format!(
            "{what} must be a list or tuple, got {value}"
        )));
    }
    value.try_iter()?.collect()
}

fn invalid(message: String) -> PyErr {
    Python::attach(|py| to_py_err(py, Error::InvalidArgument(message)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_at_picks_latest_version_or_timestamp() {
        assert!(matches!(snapshot_at(None, None), Ok(SnapshotAt::Latest)));
        assert!(matches!(
            snapshot_at(Some(3), None),
            Ok(SnapshotAt::Version(3))
        ));
        assert!(matches!(
            snapshot_at(None, Some(-5)),
            Ok(SnapshotAt::Timestamp(-5))
        ));
    }

    #[test]
    fn snapshot_at_refuses_version_and_timestamp_together() {
        let error = snapshot_at(Some(1), Some(2)).err().unwrap();
        assert!(matches!(error, Error::InvalidArgument(message) if message.contains("not both")));
    }
}
