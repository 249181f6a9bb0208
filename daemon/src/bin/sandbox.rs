//! `lazyboy-sandbox`, the sandbox helper on Linux: `lazyboy-sandbox [--sandbox-exec] [-r PATH |
//! -w PATH]... -- SHELL -c SCRIPT` confines itself with Landlock, then execs the shell (see
//! `lazyboyd::confine::landlock`). It is the daemon's hidden `--sandbox-exec` mode as a program
//! of its own, installed beside `lazyboyd` (`cargo install` puts both); the daemon runs it for
//! every confined command, as starting it costs a fraction of starting the whole daemon.

fn main() -> std::process::ExitCode {
    lazyboyd::confine::landlock::helper_main()
}
