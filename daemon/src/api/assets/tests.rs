use std::path::Path;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};

use super::*;

fn web_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../web")
}

fn files_under(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, base, out);
        } else {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            out.push(rel);
        }
    }
}

/// The table is the one registry of the page's files: nothing in `web/` is left out.
#[test]
fn every_web_file_is_served() {
    let mut files = Vec::new();
    files_under(&web_dir(), &web_dir(), &mut files);
    files.retain(|f| f != "README.md" && f != "icons/make_icons.py");
    files.sort();
    let mut served: Vec<String> = SOURCES.iter().map(|s| s.path.to_owned()).collect();
    served.sort();
    assert_eq!(files, served);
}

/// The whole dashboard weighs under 150 KB before compression.
#[test]
fn the_page_is_small() {
    let total: usize = prepared().iter().map(|p| p.body.len()).sum();
    assert!(total < 150 * 1024, "{total} bytes");
}

/// Entry points name every other file by its hashed URL; nothing is left unfilled.
#[test]
fn entry_points_are_filled_in() {
    let body = |path: &str| {
        let file = prepared().iter().find(|p| p.path == path).unwrap();
        String::from_utf8(file.body.clone()).unwrap()
    };
    let index = body("index.html");
    let sw = body("sw.js");
    for text in [&index, &sw, &body("manifest.webmanifest")] {
        assert!(!text.contains("{{"), "{text}");
    }
    for source in SOURCES
        .iter()
        .filter(|s| s.path.ends_with(".js") && s.path != "sw.js")
    {
        let url = format!("/assets/{}?v={}", source.path, hash(source.bytes));
        assert!(index.contains(&url), "index lacks {url}");
        assert!(sw.contains(&url), "sw.js does not cache {url}");
    }
}

#[test]
fn responses_are_compressed_and_cached_by_hash() {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("gzip, br"),
    );
    let source = SOURCES.iter().find(|s| s.path == "app.js").unwrap();
    let version = hash(source.bytes);
    let response = respond("app.js", Some(&version), &headers).unwrap();
    assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
    assert!(
        response.headers()[header::CACHE_CONTROL]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let stale = respond("app.js", Some("0"), &HeaderMap::new()).unwrap();
    assert_eq!(stale.headers()[header::CACHE_CONTROL], "no-cache");
    assert!(stale.headers().get(header::CONTENT_ENCODING).is_none());
    let etag = stale.headers()[header::ETAG].clone();
    headers.insert(header::IF_NONE_MATCH, etag);
    let again = respond("app.js", None, &headers).unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let png = respond("icons/icon-192.png", None, &HeaderMap::new()).unwrap();
    assert_eq!(png.headers()[header::CONTENT_TYPE], "image/png");
}
