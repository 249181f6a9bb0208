//! The dashboard's projections of the event log: the status board (`state.rs`) and an
//! agent's conversation, a page at a time (`conversation.rs`), both folded by the daemon so a
//! page never replays the log. The fold itself (`fold.rs`) is pure. Each backend reads the
//! rows (`sqlite/projections.rs`, `postgres/projections.rs`); their tests are in
//! `store/tests/projections.rs`, run on both.
//!
//! Invariant: every projection is read inside one read transaction (one snapshot) and says
//! the `seq` it is current to, so a client that streams from that seq sees each later event
//! exactly once.

pub mod conversation;
pub mod fold;
pub mod state;
