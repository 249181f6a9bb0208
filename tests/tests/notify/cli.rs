//! `lazyboy notify ls|test` and `lazyboy doctor`'s notification checks.

use std::time::Duration;

use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::notify::{Answer, Receiver, free_port};
use lazyboy_tests::{TestDaemon, output_of};

use super::config;

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_test_sends_through_each_channel_and_ls_shows_how_it_went() {
    let hook = Receiver::start().await;
    let ntfy = Receiver::start().await;
    ntfy.set_fallback(Answer::Status(500));
    let mock = MockModel::start().await;
    let notify = format!(
        "[notify]\nretry_base_ms = 50\n\n[notify.webhook]\nurl = \"{}\"\n\n[notify.ntfy]\n\
         url = \"{}\"\n",
        hook.url("/hook"),
        ntfy.url("/topic")
    );
    let daemon = TestDaemon::start_with(&config(&mock, &notify), &[]).await;
    let mut test = daemon.cli();
    test.args(["notify", "test"]);
    let output = output_of(test).await;
    let printed = text(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "one channel failed: {printed}"
    );
    assert!(printed.contains("ok    webhook: sent"), "{printed}");
    assert!(printed.contains("FAIL  ntfy: HTTP 500"), "{printed}");
    let got = hook.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(got[0].json()["kind"], "test");
    let posted = ntfy.wait_for(1, Duration::from_secs(10)).await;
    assert!(
        posted[0]
            .header("title")
            .unwrap()
            .contains("test notification")
    );
    assert_eq!(posted[0].header("priority"), Some("3"));

    let mut one = daemon.cli();
    one.args(["notify", "test", "--channel", "webhook"]);
    let output = output_of(one).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(hook.received().len(), 2);

    let mut ls = daemon.cli();
    ls.args(["notify", "ls"]);
    let output = output_of(ls).await;
    let listed = text(&output);
    assert!(output.status.success(), "{listed}");
    assert!(
        listed.contains(&format!("webhook  {}", hook.url("/hook"))),
        "{listed}"
    );
    assert!(listed.contains("last sent"), "{listed}");
    assert!(listed.contains("last failed"), "{listed}");
    assert!(listed.contains("HTTP 500"), "{listed}");
    assert!(listed.contains("links open http://127.0.0.1:"), "{listed}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_each_channel_without_sending() {
    let hook = Receiver::start().await;
    let dead = free_port();
    let mock = MockModel::start().await;
    let notify = format!(
        "[notify.webhook]\nurl = \"{}\"\nsecret_env = \"LB_TEST_UNSET_SECRET\"\n\n\
         [notify.ntfy]\nurl = \"http://127.0.0.1:{dead}/topic\"\n",
        hook.url("/hook")
    );
    let daemon = TestDaemon::start_with(&config(&mock, &notify), &[]).await;
    let mut doctor = daemon.cli();
    doctor.arg("doctor");
    let output = output_of(doctor).await;
    let printed = text(&output);
    assert!(
        printed.contains("FAIL  notify webhook: LB_TEST_UNSET_SECRET"),
        "{printed}"
    );
    assert!(printed.contains("FAIL  notify ntfy:"), "{printed}");
    assert!(hook.received().is_empty(), "doctor sends nothing");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_task_a_terminal_follows_is_not_sent_a_background_ones_is() {
    let hook = Receiver::start().await;
    let mock = MockModel::start().await;
    let notify = format!("[notify.webhook]\nurl = \"{}\"\n", hook.url("/hook"));
    let daemon = TestDaemon::start_with(&config(&mock, &notify), &[]).await;
    lazyboy_tests::add_agent(&daemon, "a").await;
    // Slow enough that `run` is following before the task ends.
    mock.push(Reply::text("followed and done").delay(Duration::from_millis(1500)));
    let ws = tempfile::tempdir().unwrap();
    let mut run = daemon.cli();
    run.args(["run", "--agent", "a", "--workspace"])
        .arg(ws.path())
        .arg("in the terminal");
    let output = output_of(run).await;
    assert!(output.status.success(), "{}", text(&output));
    mock.push(Reply::text("done in the background"));
    let task = lazyboy_tests::create_task(&daemon, "a", "in the background", None).await;
    lazyboy_tests::wait_task_finished(&daemon, &task).await;
    let got = hook.wait_for(1, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bodies: Vec<String> = hook
        .received()
        .iter()
        .map(|r| r.json()["body"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(bodies, ["done in the background"], "{got:?}");
    daemon.stop();
}
