//! From the actions of a log segment to the state of a version (spec "Action
//! Reconciliation"; catalogue C): the reconciliation of file actions (`reconcile`), the fold
//! of a segment's commits and checkpoint into a state (`load`) and the live files as Arrow
//! (`file_list`).

#[cfg(feature = "internal-api")]
pub mod file_list;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod file_list;
#[cfg(feature = "internal-api")]
pub mod load;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod load;
#[cfg(feature = "internal-api")]
pub mod reconcile;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod reconcile;
