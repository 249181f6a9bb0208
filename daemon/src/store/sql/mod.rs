//! The SQL of each table family, written once for both engines (see `dialect.rs` for how
//! one body serves both, and what differs).

pub(in crate::store) mod agents;
pub(in crate::store) mod events;
pub(in crate::store) mod notify;
pub(in crate::store) mod schedules;
pub(in crate::store) mod tasks;
