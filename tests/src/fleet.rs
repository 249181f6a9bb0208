//! Several daemons on one PostgreSQL database: a fresh schema per test on the cluster that
//! `scripts/postgres-cluster` runs (`LAZYBOY_TEST_DATABASE_URL`), and daemons started on it
//! as named nodes. Without the cluster the tests fail saying how to get one; they never skip.

use std::time::Duration;

use sqlx::Connection;

use crate::TestDaemon;

/// The URL of a fresh, empty schema on the test cluster.
pub async fn postgres_url() -> String {
    let admin = std::env::var("LAZYBOY_TEST_DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "LAZYBOY_TEST_DATABASE_URL is not set: the fleet tests need PostgreSQL. Run them \
             under scripts/postgres-cluster (scripts/test does), e.g. \
             `scripts/postgres-cluster cargo test -p lazyboy-tests --test fleet`"
        )
    });
    let schema = format!(
        "f_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at {admin}: {e}"));
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let joiner = if admin.contains('?') { '&' } else { '?' };
    format!("{admin}{joiner}options=-c%20search_path%3D{schema}")
}

/// The environment that makes a daemon node `node` on `url`, with leases of `lease`.
pub fn node_env(url: &str, node: &str, lease: Duration) -> Vec<(String, String)> {
    vec![
        ("LAZYBOY_DATABASE_URL".into(), url.into()),
        ("LAZYBOY_NODE".into(), node.into()),
        ("LAZYBOY_LEASE_TTL_MS".into(), lease.as_millis().to_string()),
    ]
}

/// Starts a daemon as node `node` on `url` (its own home, with `config` as its config.toml).
pub async fn start_node(config: &str, url: &str, node: &str, lease: Duration) -> TestDaemon {
    let env = node_env(url, node, lease);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let daemon = TestDaemon::start_with(config, &env).await;
    assert_eq!(daemon.health.node, node);
    daemon
}
