//! The SQL of each table family, written once for both engines (see `dialect.rs` for how
//! one body serves both, and what differs).

pub(in crate::store) mod agents;
pub(in crate::store) mod claims;
pub(in crate::store) mod conversation;
pub(in crate::store) mod events;
pub(in crate::store) mod keep;
pub(in crate::store) mod memories;
pub(in crate::store) mod nodes;
pub(in crate::store) mod notify;
pub(in crate::store) mod projections;
pub(in crate::store) mod schedules;
pub(in crate::store) mod tasks;
