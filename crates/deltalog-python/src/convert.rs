//! Filters given from Python: a SQL-like string, or pyarrow's DNF form (a list of
//! `(column, op, value)` tuples, or a list of such lists for OR). Only argument conversion
//! happens here; parsing and meaning live in `deltalog_core::expr`.

use deltalog_core::expr::{from_dnf, parse_sql, DnfLiteral, Expr, Scalar};
use deltalog_core::Error;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDate, PyDateTime, PyFloat, PyInt, PyList, PySet, PyString, PyTuple,
};

/// The core filter for `filter` (None, a string, or the DNF form).
pub fn filter_from_py(filter: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Expr>> {
    let Some(filter) = filter.filter(|f| !f.is_none()) else {
        return Ok(None);
    };
    let expr = if let Ok(text) = filter.cast::<PyString>() {
        parse_sql(text.to_str()?)
    } else {
        from_dnf(dnf_from_py(filter)?)
    };
    expr.map(Some)
        .map_err(|error| crate::errors::to_py_err(filter.py(), error))
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
    Python::attach(|py| crate::errors::to_py_err(py, Error::InvalidArgument(message)))
}
