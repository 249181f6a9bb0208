//! One file per resource.

pub mod agents;
pub mod daemon;
pub mod dashboard;
pub mod doctor;
pub mod events;
pub mod files;
pub mod health;
pub mod keep;
pub mod login;
pub mod mcp;
pub mod messages;
pub mod nodes;
pub mod notify;
pub mod sandbox;
pub mod schedules;
pub mod tasks;
pub mod web;
