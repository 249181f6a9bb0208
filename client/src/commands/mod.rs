//! One file per verb.

pub mod approve;
pub mod boxes;
pub mod completions;
pub mod daemon;
pub mod doctor;
pub mod events;
pub mod keep;
pub mod mcp;
pub mod mcp_serve;
pub mod nodes;
pub mod notify;
pub mod run;
pub mod schedule;
pub mod service;
pub mod tasks;
pub mod team;
pub mod tell;
pub mod web;
