//! What the benchmarks share: the runtime they run on, quick mode, medians, and a process's
//! memory and CPU time read from `/proc` (Linux only, like the benchmarks' figures).

use std::time::Duration;

/// The benchmarks' runtime: two workers, as many as the machines the figures come from have
/// cores (the mock model and the clients run on it, beside the daemon).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `BENCH_QUICK=1`: a smoke run with fewer repetitions.
pub fn quick() -> bool {
    std::env::var_os("BENCH_QUICK").is_some()
}

/// The median (the upper one for an even count).
pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`); `None` once the process is gone.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| {
        l.strip_prefix(field)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The process's own CPU time so far (utime + stime; children not included), in clock ticks
/// of 10 ms.
pub fn cpu_ticks(pid: u32) -> u64 {
    stat_ticks(pid, 11)
}

/// The CPU time of the process's children that it has waited for (cutime + cstime), in clock
/// ticks of 10 ms: for the daemon, the commands its tools ran.
pub fn children_cpu_ticks(pid: u32) -> u64 {
    stat_ticks(pid, 13)
}

/// The sum of two adjacent tick fields of `/proc/<pid>/stat`, counted after the command name.
fn stat_ticks(pid: u32, first: usize) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[first].parse::<u64>().unwrap() + fields[first + 1].parse::<u64>().unwrap()
}
