//! `lazyboyd` as the tests run it: the same entry point, built by cargo alongside the tests
//! (so it is never stale, and shares their dependency build).

fn main() -> std::process::ExitCode {
    lazyboyd::cli::main()
}
