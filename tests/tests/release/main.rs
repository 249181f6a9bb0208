//! Shipping (issue 20): what a person installs, and what an upgrade must keep.
//!
//! - `versions`: the binaries report their version and commit, and restart after an upgrade.
//! - `clean`: the Debian package and the tarball with `install.sh`, each installed on a fresh
//!   Debian bookworm container (the box build's base image, `box/build.sh --base`) with no
//!   network, used there as a non-root user with a mock model of its own, then removed. They
//!   use the packages `scripts/package` built (scripts/test builds them once, first).
//! - `upgrade`: the database the previous release made (`tests/fixtures/v0.1.0`) opened by
//!   this daemon: every migration applies, the waiting task is answered and resumes, the
//!   conversations, memories and the log read back unchanged.
//! - `migrations`: the migrations that read the whole log, applied to a 1M-event database,
//!   survive a `kill -9` in the middle; on PostgreSQL a newer schema is refused untouched
//!   (under `scripts/postgres-cluster`).

use std::path::{Path, PathBuf};
use std::process::Output;

mod clean;
mod migrations;
mod upgrade;
mod versions;

/// stdout and stderr as text.
fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}
