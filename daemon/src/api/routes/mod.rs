//! One file per resource.

pub mod agents;
pub mod daemon;
pub mod events;
pub mod health;
pub mod messages;
pub mod sandbox;
pub mod schedules;
pub mod tasks;
pub mod web;
