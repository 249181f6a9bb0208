//! One file per resource.

pub mod agents;
pub mod daemon;
pub mod events;
pub mod files;
pub mod health;
pub mod messages;
pub mod nodes;
pub mod schedules;
pub mod tasks;
pub mod web;
