//! Table maintenance with the semantics of Delta on Spark's commands: `VACUUM` ([`vacuum`]),
//! `OPTIMIZE` ([`optimize`]), `RESTORE` ([`restore`]), `CONVERT TO DELTA`
//! ([`convert`]) and `SHALLOW CLONE` ([`clone`]).

pub(crate) mod clone;
pub(crate) mod convert;
pub(crate) mod optimize;
pub(crate) mod restore;
pub(crate) mod vacuum;
