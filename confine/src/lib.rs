//! `lazyboy-sandbox`, the sandbox helper (Linux): `lazyboy-sandbox [--sandbox-exec] [OPTION]...
//! -- SHELL -c SCRIPT` starts the command inside its cgroup, starts a new session, confines itself (git
//! directories read-only in a mount namespace, capabilities dropped, Landlock, seccomp) and
//! execs the shell; each step is [`helper`]'s, in its order.
//!
//! A crate of its own so that the helper program, which the daemon starts for every host
//! command it contains or confines, carries only these layers and their small wrappers
//! (`landlock`, `seccompiler`, `nix`, `rustix`): the daemon's dependencies would make it a
//! hundred times larger and slower to start. The daemon links it too: `lazyboyd
//! --sandbox-exec` is the same [`helper_main`], run first thing in `lazyboyd::cli::main`,
//! before any thread exists (Landlock and seccomp restrict the calling thread, unshare needs
//! a single thread, and an exec keeps all of them); the daemon's `confine` module re-exports
//! these modules under its own name.
//!
//! Invariant: it never runs the shell with a layer missing that it was told to apply: a step
//! that fails exits [`REFUSED`] saying why, and that is the command's output.

#[cfg(target_os = "linux")]
pub mod caps;
#[cfg(target_os = "linux")]
pub mod clone_into;
pub mod helper;
pub mod landlock;
#[cfg(target_os = "linux")]
pub mod mounts;
#[cfg(target_os = "linux")]
pub mod seccomp;

pub use helper::helper_main;

/// The hidden first argument that makes `lazyboyd` the sandbox helper (the helper program
/// accepts it too, so both take the same arguments).
pub const HELPER_FLAG: &str = "--sandbox-exec";

/// Exit code of a command the helper refused to start (the shell's "cannot execute"). Here
/// at the root, beside the flag, because both the helper and the clone it waits on
/// (`clone_into`) exit with it, and neither names the other for it.
pub const REFUSED: u8 = 126;
