//! The command's first process born inside its cgroup (Linux): `clone3(CLONE_INTO_CGROUP)`.
//!
//! Moving a process into a cgroup (a write to `cgroup.procs`) takes the kernel's global
//! `cgroup_threadgroup_rwsem` for writing, and unless the hierarchy is mounted with
//! `favordynmods` that waits for an RCU grace period: 8 to 18 ms on these machines, paid by
//! every command whose start is not within a grace period of another's (the agent's step,
//! one command every few milliseconds, paid it most of the time). A process created in the
//! cgroup takes only the read side. So the helper ([`crate::helper`]), single-threaded and
//! about to exec, clones its child into the command's cgroup: the child goes on to become
//! the command; the helper stays outside, only waiting for it, and ends as it ended
//! ([`relay`]), so the daemon sees the command's exit status as before.
//!
//! The one `unsafe` block of the sandbox is the raw `clone3` call (no libc wrapper, no safe
//! crate, nor std, offers it): sound because the helper has a single thread when it calls
//! it, so the child (no `CLONE_VM`: a copy of the address space, as after `fork`) may run
//! any code. A kernel without it (before 5.7: `ENOSYS`, or `E2BIG` for the cgroup field)
//! makes the caller fall back to the write.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

/// `CLONE_INTO_CGROUP` (Linux 5.7), as `struct clone_args` takes its flags.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` up to its `cgroup` field (`CLONE_ARGS_SIZE_VER2`, 88 bytes).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Which side of the clone this process is.
#[derive(Debug, PartialEq, Eq)]
pub enum Side {
    /// The new process, inside the cgroup.
    Child,
    /// The caller, outside; the child's pid.
    Parent(Pid),
}

/// Whether an error of [`fork_into`] means "this kernel cannot", not "this cgroup refuses".
pub fn unsupported(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSYS | libc::E2BIG | libc::EINVAL)
    )
}

/// Forks this process into the cgroup `dir`. Call only while this process has one thread.
pub fn fork_into(dir: &Path) -> io::Result<Side> {
    let cgroup = std::fs::File::open(dir)?;
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    #[allow(
        unsafe_code,
        reason = "clone3 has no safe wrapper; the helper is single-threaded here"
    )]
    // SAFETY: `args` is a valid `struct clone_args` of the size passed, alive for the call;
    // no CLONE_VM, stack or tid pointers, so the child gets its own copy of this
    // single-threaded process, as with fork, and may run any code.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Side::Child),
        pid => Ok(Side::Parent(Pid::from_raw(
            i32::try_from(pid).map_err(|_| io::Error::other("clone3 returned no pid"))?,
        ))),
    }
}

/// The child's first step: it dies with the helper (which the daemon may kill), and if the
/// helper is gone already it stops here.
pub fn tie_to_parent(parent: Pid) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid() != parent {
        return Err(io::Error::other(
            "the sandbox helper ended before its command",
        ));
    }
    Ok(())
}

/// The helper's side: lets go of the command's stdio (so the pipes close with the command),
/// waits for the child and ends the same way: its exit code, or killed by the same signal.
pub fn relay(child: Pid) -> std::process::ExitCode {
    if let Ok(null) = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => {
                return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
            }
            Ok(WaitStatus::Signaled(_, signal, _)) => {
                // No core file of the helper for the command's crash.
                let _ = rustix::process::setrlimit(
                    rustix::process::Resource::Core,
                    rustix::process::Rlimit {
                        current: Some(0),
                        maximum: Some(0),
                    },
                );
                let _ = nix::sys::signal::raise(signal);
                // A signal this process ignores (SIGPIPE, as Rust sets it) or handles: the
                // shell's convention.
                return std::process::ExitCode::from(128u8.wrapping_add(signal as u8));
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return std::process::ExitCode::from(crate::REFUSED),
        }
    }
}
