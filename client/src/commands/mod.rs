//! One file per verb.

pub mod agent;
pub mod daemon;
pub mod events;
pub mod run;
pub mod schedule;
pub mod tasks;
