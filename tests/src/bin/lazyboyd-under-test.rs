//! `lazyboyd` as the tests run it: the same entry point, built by cargo alongside the tests
//! (so it is never stale, and shares their dependency build). Its commit is
//! [`lazyboy_tests::UNDER_TEST_COMMIT`] (see `lazyboy-under-test.rs`).

fn main() -> std::process::ExitCode {
    lazyboyd::cli::main(lazyboy_tests::UNDER_TEST_COMMIT)
}
