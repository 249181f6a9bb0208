//! `lazyboy`, the command line. It talks to `lazyboyd` over the home's local socket and
//! starts the daemon when a command needs it.

pub mod app;
pub mod approval;
pub mod cli;
pub mod commands;
pub mod connection;
pub mod daemon_proc;
pub mod mcp_relay;
pub mod reach;
pub mod render;
pub mod service_file;
pub mod visible;
