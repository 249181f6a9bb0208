//! seccomp, the sandbox's second layer (Linux): a filter the helper installs on itself just
//! before it execs the shell, inherited by every process of the command and never removable.
//! Whatever Landlock lets through, these calls fail with `EPERM`:
//!
//! - `ioctl(fd, TIOCSTI | TIOCLINUX, ...)`: pushing input into a terminal (or the console),
//!   on any descriptor however it was obtained. The request is compared on its low 32 bits,
//!   as the kernel reads it (`unsigned int cmd`): high bits set by the caller change nothing.
//! - `socket(AF_UNIX, ...)`: no UNIX socket at all, so no Docker socket, no daemon socket, no
//!   D-Bus, no abstract socket, whatever their permissions. `socketpair` stays allowed (pipes
//!   between the command's own processes), as do IP sockets.
//! - `io_uring_setup` (and its two siblings): io_uring makes sockets and issues ioctls
//!   without the system calls above, so it would walk around this filter.
//!
//! On x86_64 the same calls through the x32 ABI are denied too (its numbers carry bit 30;
//! kernels without x32 answer ENOSYS for them anyway). The filter is built by `seccompiler`
//! (rust-vmm) for the architecture this runs on; an architecture it does not know refuses
//! confined commands rather than running them without the layer.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `TIOCSTI` and `TIOCLINUX` (the same on every architecture Linux gives them).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
/// x86_64's x32 ABI: its syscall numbers are the 64-bit ones (or 512+) with this bit.
const X32: i64 = 0x4000_0000;

/// Installs the filter on the calling thread (and sets `no_new_privs`, which it needs).
pub fn apply() -> Result<(), String> {
    let program = program().map_err(|e| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

/// The filter, compiled for this machine's architecture.
pub fn program() -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules()?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

fn rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, seccompiler::Error> {
    let low32 = |arg: u8, value: u64| -> Result<SeccompRule, seccompiler::Error> {
        Ok(SeccompRule::new(vec![SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            value,
        )?])?)
    };
    let unix = u64::try_from(libc::AF_UNIX).unwrap_or(1);
    let socket = vec![low32(0, unix)?];
    let ioctl = vec![low32(1, TIOCSTI)?, low32(1, TIOCLINUX)?];
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket.clone());
    rules.insert(libc::SYS_ioctl, ioctl);
    // An empty rule list matches every call of that number.
    for uring in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(uring, Vec::new());
        if cfg!(target_arch = "x86_64") {
            rules.insert(uring | X32, Vec::new());
        }
    }
    if cfg!(target_arch = "x86_64") {
        rules.insert(libc::SYS_socket | X32, socket);
        // x32's ioctl has a number of its own (514); no x32 program is ever needed here.
        rules.insert(514 | X32, Vec::new());
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constants_are_the_kernels() {
        // Compared as text: `Ioctl`'s type differs between C libraries.
        assert_eq!(TIOCSTI.to_string(), libc::TIOCSTI.to_string());
        assert_eq!(TIOCLINUX.to_string(), libc::TIOCLINUX.to_string());
    }

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let program = program().unwrap();
        // Small: every system call of every command runs through it.
        assert!(program.len() < 128, "{} instructions", program.len());
    }
}
