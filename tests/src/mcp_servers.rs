//! The real MCP servers the tests run, as `scripts/mcp-servers` installed them into
//! `tests/.mcp/` (pinned npm and PyPI packages). A missing one fails the test saying how to
//! install it: no test skips for want of a server.

use std::path::{Path, PathBuf};

/// `tests/.mcp`.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".mcp")
}

fn installed(relative: &str) -> String {
    let path = root().join(relative);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/mcp-servers (scripts/test does) to install the MCP \
         servers the tests use",
        path.display()
    );
    path.display().to_string()
}

/// `@modelcontextprotocol/server-everything` (stdio by default; `streamableHttp` with
/// `PORT` serves `/mcp`).
pub fn everything() -> String {
    installed("node_modules/.bin/mcp-server-everything")
}

/// `@modelcontextprotocol/server-filesystem` (give it the allowed directories as args).
pub fn filesystem() -> String {
    installed("node_modules/.bin/mcp-server-filesystem")
}

/// `mcp-server-time` from PyPI.
pub fn time() -> String {
    installed("venv/bin/mcp-server-time")
}

/// `mcp-server-git` from PyPI (`--repository DIR`).
pub fn git() -> String {
    installed("venv/bin/mcp-server-git")
}

/// A TOML string literal.
pub fn toml_str(text: &str) -> String {
    format!("{text:?}")
}

/// The test venv's Python (it has the official `mcp` SDK, a dependency of the servers).
pub fn python() -> String {
    installed("venv/bin/python")
}

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
        .display()
        .to_string()
}
