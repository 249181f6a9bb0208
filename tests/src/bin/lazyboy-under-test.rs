//! `lazyboy` as the tests run it: the same entry point, built by cargo alongside the tests.

fn main() -> std::process::ExitCode {
    lazyboy::app::main()
}
