//! Gives the shipped binaries the git commit they are built from (`LAZYBOY_COMMIT`), for
//! `lazyboy --version` and `/api/health`: the environment's `LAZYBOY_COMMIT` if set (a
//! source tarball has no `.git`; `scripts/package` sets it), else `git rev-parse HEAD` of this
//! checkout, else `unknown`.
//!
//! It reruns when HEAD moves (the git dir's `HEAD`, the branch it names, `packed-refs`), and
//! only this package's three one-line mains are rebuilt then: the libraries take the commit
//! as an argument, so a commit never rebuilds the daemon, the CLI or the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Watches `path` if it exists (cargo reruns a script every build for a path that does not).
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=LAZYBOY_COMMIT");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let given = std::env::var("LAZYBOY_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let commit = given.or_else(|| {
        let dir = |args: &[&str]| git(&root, args).map(|p| root.join(p));
        if let Some(git_dir) = dir(&["rev-parse", "--git-dir"]) {
            watch(&git_dir.join("HEAD"));
            if let Some(common) = dir(&["rev-parse", "--git-common-dir"]) {
                watch(&common.join("packed-refs"));
                if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
                    watch(&common.join(branch));
                }
            }
        }
        git(&root, &["rev-parse", "--short=12", "HEAD"])
    });
    let commit = commit.unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=LAZYBOY_COMMIT={commit}");
}
