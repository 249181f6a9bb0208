//! The environment (`LAZYBOY_BASE_URL`, `LAZYBOY_WIRE`, `LAZYBOY_MODEL`, `LAZYBOY_API_KEY`)
//! configures the default provider only: an agent that names a provider
//! (`--model NAME/MODEL`) talks to that provider's own server, with its own key.

use super::*;

use lazyboy_tests::{add_agent, create_task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_configures_the_default_provider_and_a_named_one_keeps_its_own() {
    let env_server = MockModel::start().await;
    let router = MockModel::start().await;
    env_server.set_fallback(Reply::text("from the environment's server"));
    router.set_fallback(Reply::text("from the named provider"));
    // The README's quick setup in the environment, plus one named provider in the file.
    let config = format!(
        "heartbeat_secs = 1\n\n[providers.openrouter]\nwire = \"openai\"\nbase_url = \"{}\"\n\
         model = \"router-default\"\napi_key_env = \"ROUTER_KEY\"\n\n[retry]\nmax_attempts = 1\n",
        router.openai_base_url()
    );
    let env_url = env_server.openai_base_url();
    let daemon = TestDaemon::start_with(
        &config,
        &[
            ("LAZYBOY_BASE_URL", env_url.as_str()),
            ("LAZYBOY_WIRE", "openai"),
            ("LAZYBOY_MODEL", "env-model"),
            ("LAZYBOY_API_KEY", "sk-env-key"),
            ("ROUTER_KEY", "sk-router-key"),
        ],
    )
    .await;

    // The default agent: the environment's server, model and key.
    let task = create_task(&daemon, "default", "hello", None).await;
    let done = wait_task_finished(&daemon, &task).await;
    assert_eq!(done.verdict, Some(Verdict::Answer), "{done:?}");
    assert_eq!(env_server.request_count(), 1);
    assert_eq!(
        router.request_count(),
        0,
        "the default agent reached the named provider"
    );
    let seen = env_server.last_request().unwrap();
    assert_eq!(seen.model, "env-model");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-env-key"));

    // An agent naming the provider: its own server and key, whatever the environment says.
    add_agent(&daemon, "writer").await;
    let response = daemon
        .http
        .patch(daemon.url("/api/agents/writer"))
        .json(&json!({"model": "openrouter/anthropic/claude-sonnet-4.5"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let task = create_task(&daemon, "writer", "hello", None).await;
    let done = wait_task_finished(&daemon, &task).await;
    assert_eq!(done.verdict, Some(Verdict::Answer), "{done:?}");
    assert_eq!(
        env_server.request_count(),
        1,
        "the named provider's request went to the environment's server"
    );
    assert_eq!(router.request_count(), 1);
    let seen = router.last_request().unwrap();
    assert_eq!(seen.model, "anthropic/claude-sonnet-4.5");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-router-key"));
    daemon.stop();
}
