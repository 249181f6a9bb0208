//! `--version` and `/api/health` name the version and the commit a binary was built from (the
//! binaries under test carry a marker; the shipped ones the real commit, checked in `clean`).

use lazyboy_tests::{TestDaemon, UNDER_TEST_COMMIT, bin};

use super::text;

#[tokio::test]
async fn the_binaries_and_health_report_the_version_and_the_commit() {
    let build = lazyboy_protocol::build_name(env!("CARGO_PKG_VERSION"), UNDER_TEST_COMMIT);
    for (name, shown) in [("lazyboy", "lazyboy"), ("lazyboyd", "lazyboyd")] {
        let output = std::process::Command::new(bin(name))
            .arg("--version")
            .output()
            .unwrap();
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        assert_eq!(stdout.trim(), format!("{shown} {build}"));
    }
    let daemon = TestDaemon::start().await;
    assert_eq!(daemon.health.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(daemon.health.commit, UNDER_TEST_COMMIT);
    let status = daemon.cli().args(["daemon", "status"]).output().unwrap();
    assert!(
        text(&status)
            .0
            .contains(&format!("lazyboyd {build} running"))
    );
    daemon.stop();
}
