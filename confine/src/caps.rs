//! A root daemon's confined commands keep only root's say over files (Linux): the helper
//! drops every other capability from its bounding, permitted, effective, inheritable and
//! ambient sets before Landlock, so neither the command nor anything it execs (setuid
//! programs included: `no_new_privs`) has them again. Kept: `CHOWN`, `DAC_OVERRIDE`,
//! `DAC_READ_SEARCH`, `FOWNER`, `FSETID`, `SETUID`, `SETGID`, `KILL` (signals stay scoped
//! by Landlock) and `NET_BIND_SERVICE`: what a root user's ordinary work in a workspace
//! needs. Gone, among others:
//!
//! - `SYS_ADMIN` and `PERFMON`: with either, the kernel lets a process read any other's
//!   memory map for reading, whatever an LSM says (`mm_access`), so Landlock's ptrace scope
//!   alone did not keep `/proc/<pid>/environ` of the person's shells from a root command;
//!   `SYS_ADMIN` also is what TIOCSTI into someone else's terminal requires;
//! - `SYS_MODULE`, `SYS_RAWIO`, `BPF`, `SYS_BOOT`, `SYS_TIME`, `NET_ADMIN`, `NET_RAW`,
//!   `MKNOD`, `SYS_PTRACE`, `SETPCAP`, `SETFCAP`, `SYSLOG`: ways around any filesystem rule
//!   (a kernel module, raw I/O ports, BPF programs) or into the machine's configuration.
//!
//! An unprivileged daemon's commands have no capabilities to drop (in the user namespace of
//! the git protection they lose theirs at the exec).

use rustix::io::Errno;
use rustix::thread::{
    CapabilitySet, CapabilitySets, capabilities, clear_ambient_capability_set,
    remove_capability_from_bounding_set, set_capabilities,
};

/// What a root command keeps.
pub const KEPT: CapabilitySet = CapabilitySet::CHOWN
    .union(CapabilitySet::DAC_OVERRIDE)
    .union(CapabilitySet::DAC_READ_SEARCH)
    .union(CapabilitySet::FOWNER)
    .union(CapabilitySet::FSETID)
    .union(CapabilitySet::SETUID)
    .union(CapabilitySet::SETGID)
    .union(CapabilitySet::KILL)
    .union(CapabilitySet::NET_BIND_SERVICE);

/// Drops every capability but [`KEPT`] (nothing to do when this process has none).
pub fn drop_all_but_kept() -> Result<(), String> {
    let current = capabilities(None).map_err(|e| format!("capget: {e}"))?;
    if current.permitted.is_empty() {
        return Ok(());
    }
    for bit in 0..64 {
        let cap = CapabilitySet::from_bits_retain(1 << bit);
        if KEPT.contains(cap) {
            continue;
        }
        match remove_capability_from_bounding_set(cap) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(Errno::INVAL) => break,
            Err(e) => return Err(format!("cannot drop capability {bit}: {e}")),
        }
    }
    match clear_ambient_capability_set() {
        Ok(()) | Err(Errno::INVAL) => {}
        Err(e) => return Err(format!("cannot clear the ambient capabilities: {e}")),
    }
    set_capabilities(
        None,
        CapabilitySets {
            effective: current.effective & KEPT,
            permitted: current.permitted & KEPT,
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|e| format!("capset: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dangerous_ones_are_not_kept() {
        for gone in [
            CapabilitySet::SYS_ADMIN,
            CapabilitySet::PERFMON,
            CapabilitySet::SYS_MODULE,
            CapabilitySet::SYS_PTRACE,
            CapabilitySet::SETPCAP,
            CapabilitySet::BPF,
        ] {
            assert!(!KEPT.intersects(gone), "{gone:?}");
        }
        assert!(KEPT.contains(CapabilitySet::DAC_OVERRIDE | CapabilitySet::CHOWN));
    }
}
