//! One file per verb.

pub mod completions;
pub mod daemon;
pub mod events;
pub mod nodes;
pub mod run;
pub mod schedule;
pub mod service;
pub mod tasks;
pub mod team;
pub mod tell;
