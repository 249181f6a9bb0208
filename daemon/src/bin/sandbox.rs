//! `lazyboy-sandbox`, the sandbox helper on Linux: `lazyboy-sandbox [--sandbox-exec] [--cgroup
//! DIR] [--off] [--protect PATH]... [-r PATH | -w PATH]... -- SHELL -c SCRIPT` joins the
//! command's cgroup, starts a new session, confines itself (git directories read-only,
//! Landlock, seccomp), then execs the shell (see `lazyboyd::confine::helper`). It is the
//! daemon's hidden `--sandbox-exec` mode as a program of its own, installed beside `lazyboyd`
//! (`cargo install` puts both); the daemon runs it for every host command it contains or
//! confines, as starting it costs a fraction of starting the whole daemon.

fn main() -> std::process::ExitCode {
    lazyboyd::confine::helper::helper_main()
}
