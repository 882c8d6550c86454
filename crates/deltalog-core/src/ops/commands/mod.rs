//! Table maintenance with the semantics of Delta on Spark's commands: `VACUUM` ([`vacuum`]),
//! `OPTIMIZE` ([`optimize`]), `RESTORE` ([`restore`]) and `CONVERT TO DELTA`
//! ([`convert`]).

pub(crate) mod convert;
pub(crate) mod optimize;
pub(crate) mod restore;
pub(crate) mod vacuum;
