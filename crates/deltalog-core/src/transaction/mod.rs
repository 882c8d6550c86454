//! Writing to a table: transactions, atomic commits, conflict checks and retries.

pub mod encode;
