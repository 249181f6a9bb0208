//! A fetched body as something a model can read: HTML becomes text (html2text: a real
//! HTML5 parser; navigation, headers, footers, forms and scripts hidden by CSS so the main
//! content leads; links kept as numbered references with their URLs listed at the end), JSON
//! and other text pass through, anything else is described and not dumped.

/// Page chrome that is not the content. html2text applies these like a browser would.
const HIDE: &str = "nav, footer, aside, form, script, style, noscript, template, svg, \
                    iframe, button, select { display: none; }";

/// Wrap width of rendered HTML: wide enough that lines are rarely broken.
const WIDTH: usize = 120;

/// The body as text, by its content type (sniffed when the server sent none).
pub fn convert(content_type: &str, body: &[u8], url: &str) -> String {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let kind = if mime.is_empty() {
        sniff(body)
    } else {
        classify(&mime)
    };
    match kind {
        Kind::Html => html(body, url),
        Kind::Text => String::from_utf8_lossy(body).into_owned(),
        Kind::Binary => format!(
            "(binary content: {}, {} bytes; not shown: web_fetch returns text only)",
            if mime.is_empty() {
                "no content type"
            } else {
                &mime
            },
            body.len()
        ),
    }
}

#[derive(Debug, PartialEq)]
enum Kind {
    Html,
    Text,
    Binary,
}

fn classify(mime: &str) -> Kind {
    match mime {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        m if m.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-ndjson"
        | "application/yaml"
        | "application/toml" => Kind::Text,
        m if m.ends_with("+json") || m.ends_with("+xml") => Kind::Text,
        _ => Kind::Binary,
    }
}

/// No content type: HTML if it looks like it, text if it is UTF-8 without NULs.
fn sniff(body: &[u8]) -> Kind {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        Kind::Html
    } else if std::str::from_utf8(body).is_ok() && !body.contains(&0) {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// HTML rendered as text with the title first; falls back to the raw text if the renderer
/// refuses the document.
fn html(body: &[u8], url: &str) -> String {
    let config = match html2text::config::plain().add_css(HIDE) {
        Ok(config) => config.link_footnotes(true).no_table_borders(),
        Err(_) => html2text::config::plain().link_footnotes(true),
    };
    let text = match config.string_from_read(body, WIDTH) {
        Ok(text) => text,
        Err(error) => {
            tracing::debug!(%error, url, "html2text failed; passing the page through");
            String::from_utf8_lossy(body).into_owned()
        }
    };
    let text = squeeze_blank_lines(&text);
    match title(body) {
        Some(title) if !title.is_empty() => format!("# {title}\n\n{text}"),
        _ => text,
    }
}

/// The document's `<title>`, as text.
fn title(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(64 * 1024)]);
    let lower = head.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    let raw = &head[open_end..end];
    let text = html2text::config::plain()
        .string_from_read(raw.as_bytes(), 1000)
        .unwrap_or_else(|_| raw.to_owned());
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// At most one blank line in a row (hidden elements leave runs of them).
fn squeeze_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<!doctype html><html><head><title>The  Page</title>\
        <style>body { color: red }</style><script>var secret = 1;</script></head><body>\
        <nav><a href=\"/home\">Home</a> <a href=\"/about\">About</a></nav>\
        <main><h1>Hello</h1><p>Some <b>bold</b> text and a \
        <a href=\"https://example.org/docs\">link to the docs</a>.</p></main>\
        <footer>Copyright nobody</footer></body></html>";

    #[test]
    fn html_becomes_text_with_its_links_and_without_chrome() {
        let text = convert("text/html; charset=utf-8", PAGE.as_bytes(), "http://x/");
        assert!(text.starts_with("# The Page"), "{text}");
        assert!(text.contains("Hello"), "{text}");
        assert!(text.contains("Some **bold** text"), "{text}");
        assert!(text.contains("link to the docs"), "{text}");
        assert!(text.contains("https://example.org/docs"), "{text}");
        for gone in ["<", "secret", "color: red", "Copyright", "About"] {
            assert!(!text.contains(gone), "{gone:?} in {text}");
        }
    }

    #[test]
    fn json_and_text_pass_through_and_binary_is_described() {
        let json = br#"{"a": [1, 2]}"#;
        assert_eq!(convert("application/json", json, "u"), r#"{"a": [1, 2]}"#);
        assert_eq!(
            convert("application/problem+json", json, "u"),
            r#"{"a": [1, 2]}"#
        );
        assert_eq!(convert("text/plain", b"plain <b>", "u"), "plain <b>");
        let png = convert("image/png", &[0x89, b'P', b'N', b'G', 0, 0], "u");
        assert!(png.contains("binary content: image/png, 6 bytes"), "{png}");
    }

    #[test]
    fn a_missing_content_type_is_sniffed() {
        assert!(convert("", PAGE.as_bytes(), "u").contains("Hello"));
        assert!(!convert("", PAGE.as_bytes(), "u").contains("<main>"));
        assert_eq!(convert("", b"just text", "u"), "just text");
        assert!(convert("", &[0, 1, 2, 255], "u").contains("binary content"));
    }
}
