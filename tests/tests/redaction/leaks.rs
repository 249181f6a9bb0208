//! Where a secret could have gone, and an oracle that finds it there in any of the forms the
//! daemon promises to redact, written independently of the daemon's matcher: the text with
//! everything but the key's own alphabet dropped (so any separator between two halves is
//! ignored), base64 of either alphabet at every alignment, hex at both nibble offsets.

use std::path::Path;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use lazyboy_tests::TestDaemon;
use lazyboy_tests::mock_model::MockModel;

/// Decodes any base64 without padding, trailing bits allowed (a slice cut anywhere).
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

fn alnum(text: &str) -> String {
    text.chars().filter(char::is_ascii_alphanumeric).collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// How `text` carries `secret`, if it does: "plain", "base64" or "hex".
pub fn carries(text: &str, secret: &str) -> Option<&'static str> {
    if alnum(text).contains(&alnum(secret)) {
        return Some("plain");
    }
    // The URL-safe alphabet mapped onto the standard one; everything else dropped.
    let b64: Vec<u8> = text
        .bytes()
        .filter_map(|b| match b {
            b'-' => Some(b'+'),
            b'_' => Some(b'/'),
            b if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' => Some(b),
            _ => None,
        })
        .collect();
    for offset in 0..4 {
        let Some(rest) = b64.get(offset..) else { break };
        // A last group of 2 or 3 characters decodes (1 or 2 bytes); a lone one never does.
        let whole = &rest[..rest.len() - usize::from(rest.len() % 4 == 1)];
        if LENIENT
            .decode(whole)
            .is_ok_and(|bytes| contains(&bytes, secret.as_bytes()))
        {
            return Some("base64");
        }
    }
    let hex: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    for offset in 0..2 {
        let bytes: Vec<u8> = hex
            .get(offset..)
            .unwrap_or_default()
            .chunks_exact(2)
            .filter_map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
            .collect();
        if contains(&bytes, secret.as_bytes()) {
            return Some("hex");
        }
    }
    None
}

/// Fails naming the place and the form if `text` carries any of `secrets`.
pub fn assert_clean(text: &str, place: &str, secrets: &[&str]) {
    for secret in secrets {
        if let Some(form) = carries(text, secret) {
            panic!("{place} carries {secret} ({form}):\n{}", excerpt(text));
        }
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(4000).collect()
}

/// What a person or the model can read of the daemon's record while it runs: `lazyboy
/// events`, `/api/state`, the agent's conversation, and every request the model received.
pub async fn assert_clean_while_running(
    daemon: &TestDaemon,
    mock: &MockModel,
    agent: &str,
    secrets: &[&str],
) {
    let events = lazyboy_tests::output_of({
        let mut command = daemon.cli();
        // As the person's shell would give it (the same value when it is the home's file).
        command
            .env("LAZYBOY_TOKEN", daemon.token())
            .args(["events"]);
        command
    })
    .await;
    assert!(events.status.success());
    let events = String::from_utf8_lossy(&events.stdout).into_owned();
    assert!(events.lines().count() > 5, "{events}");
    assert_clean(&events, "lazyboy events", secrets);
    let all = lazyboy_tests::all_events(daemon, 0).await;
    assert_clean(
        &serde_json::to_string(&all).unwrap(),
        "/api/events/page",
        secrets,
    );
    let client = daemon.client();
    let state: serde_json::Value = client.get("/api/state").await.unwrap();
    assert_clean(&state.to_string(), "/api/state", secrets);
    let conversation: serde_json::Value = client
        .get(&format!("/api/agents/{agent}/conversation?limit=500"))
        .await
        .unwrap();
    assert_clean(&conversation.to_string(), "the conversation API", secrets);
    let requests = mock.requests();
    assert!(!requests.is_empty());
    for (i, request) in requests.iter().enumerate() {
        assert_clean(
            &request.body.to_string(),
            &format!("request {i} to the model"),
            secrets,
        );
    }
}

/// Every file in the daemon's home once it stopped (the database and its WAL, the logs, the
/// daemon's stderr), except those named in `skip` (the token file holds the token).
pub fn assert_clean_home(home: &Path, secrets: &[&str], skip: &[&str]) {
    let mut files = 0;
    let mut stack = vec![home.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if skip.contains(&name.as_str()) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue; // the socket
            };
            files += 1;
            assert_clean(
                &String::from_utf8_lossy(&bytes),
                &path.display().to_string(),
                secrets,
            );
        }
    }
    let db = home.join(lazyboy_protocol::paths::DATABASE);
    assert!(
        db.exists() && files >= 3,
        "{files} files in {}",
        home.display()
    );
}

#[test]
fn the_oracle_finds_every_form_and_nothing_else() {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let key = "sk-proj-Zt9~Qv2>xK7?mW4nR8pL3sJ6hF1dG5aE0cB9yU2iO7tY4wX8vN3mQ6zP1k";
    assert_eq!(carries(&format!("x {key} y"), key), Some("plain"));
    assert_eq!(
        carries(&format!("x {}\n{} y", &key[..20], &key[20..]), key),
        Some("plain")
    );
    for prefix in ["", "a", "ab", "abc"] {
        let encoded = STANDARD.encode(format!("{prefix}{key}!"));
        assert_eq!(
            carries(&format!("b64: {encoded}"), key),
            Some("base64"),
            "{prefix}"
        );
        let encoded = URL_SAFE_NO_PAD.encode(format!("{prefix}{key}"));
        assert_eq!(carries(&format!("{{\"{encoded}\"}}"), key), Some("base64"));
    }
    let hex: String = key.bytes().map(|b| format!("{b:02x} ")).collect();
    assert_eq!(carries(&format!("z{hex}"), key), Some("hex"));
    assert_eq!(
        carries("[redacted MOCK_PROVIDER_KEY, base64] c2stcHJv", key),
        None
    );
}
