//! `lazyboy` as the tests run it: the same entry point, built by cargo alongside the tests.
//! Its commit is [`lazyboy_tests::UNDER_TEST_COMMIT`]: the real one comes from the shipped
//! binaries' build script, which the tests do not run (it would rebuild them at every commit).

fn main() -> std::process::ExitCode {
    lazyboy::app::main(lazyboy_tests::UNDER_TEST_COMMIT)
}
