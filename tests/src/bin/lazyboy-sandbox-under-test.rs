//! `lazyboy-sandbox` as the tests run it, beside `lazyboyd-under-test` (which finds it there).

fn main() -> std::process::ExitCode {
    lazyboyd::confine::helper::helper_main()
}
