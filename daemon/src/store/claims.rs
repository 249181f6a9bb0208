//! The claim protocol: how a daemon comes to run a task, keeps it, and loses it.
//!
//! - **Claim** (`claim_next`, `claim_subagents`): a compare-and-set on the task's row,
//!   `queued` → `running` with `owner` = this node and a fresh lease, in one transaction with
//!   its `task_state` event. The per-agent rule (one top-level task of an agent running at a
//!   time, across all daemons), the node's capacity and the agent's pin are conditions of the
//!   same statement, evaluated while the writer is exclusive (SQLite: the writer mutex;
//!   PostgreSQL: the advisory lock every write transaction takes first), so two claims can
//!   never both pass. A subagent is claimed only by the node that runs its parent (they
//!   share a workspace).
//! - **Renew** (`renew`): only `owner = this node` rows are renewed; the answer says which
//!   were (a task missing from it was lost) and which a person asked to stop elsewhere.
//! - **Recover** (`claim_expired`): a `running`/`recovering` task whose lease ran out (or
//!   that this node owned before it restarted) is claimed as `recovering` by whichever
//!   daemon gets there first, and goes through the loop's recovery path (in-flight calls
//!   `unknown`, never re-run).
//! - **Fence**: while a task runs, its state changes and its loop's appends require
//!   `owner = this node` ([`TaskGuard::Owner`], `append_as_owner`): a daemon that lost its
//!   claim stops instead of writing over the new owner.
//!
//! Lease times come from the writer's clock on SQLite (one machine) and from the database
//! server's clock on PostgreSQL, so machines with skewed clocks agree on expiry.

use lazyboy_protocol::TaskState;

/// The precondition of a task's state change.
#[derive(Debug, Clone, Copy)]
pub enum TaskGuard {
    /// The running task's own loop: this node must hold its claim.
    Owner,
    /// Anyone else: the task must still be in this (non-running) state.
    From(TaskState),
}

/// What a lease renewal found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Renewal {
    /// Tasks whose lease this node renewed (still ours).
    pub renewed: Vec<String>,
    /// Of those, the ones a person asked (on some daemon) to stop.
    pub stop: Vec<String>,
}
