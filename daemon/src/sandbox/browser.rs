//! What the browser tools do to the page on screen: navigate, read it as text with numbered
//! refs, click, type, wait.
//!
//! A snapshot runs one script in the page ([`SNAPSHOT`]): it walks the visible DOM, writes
//! the readable text, and gives every link, button and field a number, stored on the element
//! as `data-lbref`. The numbers stay valid until the next snapshot (which clears them first),
//! or until the page navigates away; a ref that is gone is a clear error telling the model
//! to look again.

use std::time::Duration;

use serde_json::{Value, json};

use super::BoxError;
use super::cdp::Page;

/// The snapshot script: `{title, url, refs, text}`.
const SNAPSHOT: &str = r#"(() => {
  const LIMIT = 40000;
  for (const el of document.querySelectorAll('[data-lbref]')) el.removeAttribute('data-lbref');
  let n = 0, size = 0, cut = false;
  const lines = [];
  let line = [];
  const flush = () => { if (line.length) { lines.push(line.join(' ')); line = []; } };
  const put = (t) => { if (cut) return; size += t.length + 1; if (size > LIMIT) { cut = true; return; } line.push(t); };
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const kindOf = (el) => {
    const tag = el.tagName, role = el.getAttribute('role');
    if (tag === 'A' && el.hasAttribute('href')) return 'link';
    if (tag === 'BUTTON' || tag === 'SUMMARY') return 'button';
    if (tag === 'INPUT') {
      const type = (el.type || 'text').toLowerCase();
      if (type === 'hidden') return null;
      if (['submit', 'button', 'reset', 'image'].includes(type)) return 'button';
      if (type === 'checkbox' || type === 'radio') return type;
      return 'field';
    }
    if (tag === 'TEXTAREA') return 'field';
    if (tag === 'SELECT') return 'select';
    if (role === 'button' || role === 'link' || role === 'checkbox' || role === 'tab' || role === 'menuitem') return role;
    if (role === 'textbox' || role === 'searchbox') return 'field';
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'field';
    return null;
  };
  const label = (el) => clean(el.getAttribute('aria-label') || (el.tagName === 'INPUT' ? '' : el.innerText)
    || el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('alt')
    || el.getAttribute('name') || (['submit', 'button'].includes(el.type) ? el.value : '')).slice(0, 100);
  const BLOCK = /^(block|flex|grid|list-item|table|table-row|flow-root)$/;
  const walk = (node) => {
    if (cut) return;
    if (node.nodeType === 3) { const t = clean(node.textContent); if (t) put(t); return; }
    if (node.nodeType !== 1) return;
    const el = node, tag = el.tagName;
    if (['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'IFRAME'].includes(tag)) return;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') return;
    const block = BLOCK.test(style.display) || tag === 'BR';
    if (block) flush();
    const kind = kindOf(el);
    if (kind) {
      n += 1;
      el.setAttribute('data-lbref', String(n));
      let item = `[${n}] ${kind} "${label(el)}"`;
      if (kind === 'field' || kind === 'select') item += ` value="${clean(el.value ?? el.innerText).slice(0, 60)}"`;
      if (kind === 'checkbox' || kind === 'radio') item += el.checked ? ' (checked)' : ' (unchecked)';
      if (kind === 'link') item += ` -> ${el.getAttribute('href')}`;
      put(item);
    } else {
      if (/^H[1-6]$/.test(tag)) put('#'.repeat(Number(tag[1])));
      for (const child of el.childNodes) walk(child);
    }
    if (block) flush();
  };
  if (document.body) walk(document.body);
  flush();
  let text = lines.join('\n');
  if (cut) text += '\n[... the page goes on; scroll or narrow down with browser_wait/selector]';
  return {title: document.title, url: location.href, refs: n, text};
})()"#;

/// The page, read.
pub async fn snapshot(page: &mut Page) -> Result<String, BoxError> {
    page.settle(Duration::from_secs(5)).await?;
    let value = page.eval(SNAPSHOT).await?;
    Ok(format!(
        "{} — {}\n{} refs (use them with browser_click / browser_type until your next \
         snapshot)\n\n{}",
        value["title"].as_str().unwrap_or(""),
        value["url"].as_str().unwrap_or(""),
        value["refs"],
        value["text"].as_str().unwrap_or("")
    ))
}

/// Checks a navigation target: an absolute http(s) URL (or `about:blank`, `file:`).
pub fn check_url(url: &str) -> Result<reqwest::Url, String> {
    match reqwest::Url::parse(url.trim()) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https" | "file" | "about") => {
            if matches!(parsed.scheme(), "http" | "https") && parsed.host_str().is_none() {
                return Err(format!("{url:?} has no host"));
            }
            Ok(parsed)
        }
        Ok(parsed) => Err(format!(
            "{url:?} is not a web address (scheme {:?}); give an absolute http:// or https:// URL",
            parsed.scheme()
        )),
        Err(error) => Err(format!(
            "{url:?} is not a URL ({error}); give an absolute http:// or https:// URL, e.g. \
             https://example.com/"
        )),
    }
}

/// Navigates and waits for the page to load; `title — url`.
pub async fn navigate(page: &mut Page, url: &reqwest::Url) -> Result<String, BoxError> {
    let result = page
        .call("Page.navigate", json!({"url": url.as_str()}))
        .await?;
    if let Some(error) = result["errorText"].as_str().filter(|e| !e.is_empty()) {
        return Err(BoxError::Browser(format!(
            "the browser could not open {url}: {error}"
        )));
    }
    page.settle(Duration::from_secs(30)).await?;
    let here = page
        .eval("JSON.stringify([document.title, location.href])")
        .await?;
    let here: Vec<String> = serde_json::from_str(here.as_str().unwrap_or("[]")).unwrap_or_default();
    Ok(format!(
        "loaded {} — {}",
        here.first().map_or("", String::as_str),
        here.get(1).map_or("", String::as_str)
    ))
}

/// The element behind `reference`, scrolled into view: its center and description.
async fn element(page: &mut Page, reference: u32, focus: bool) -> Result<Value, BoxError> {
    let script = format!(
        r#"(() => {{
  const el = document.querySelector('[data-lbref="{reference}"]');
  if (!el) return null;
  el.scrollIntoView({{block: 'center', inline: 'center'}});
  if ({focus}) {{
    el.focus();
    if ('value' in el && el.tagName !== 'SELECT') {{ el.value = ''; el.dispatchEvent(new Event('input', {{bubbles: true}})); }}
    else if (el.isContentEditable) {{ document.execCommand('selectAll'); document.execCommand('delete'); }}
  }}
  const r = el.getBoundingClientRect();
  return {{x: r.left + r.width / 2, y: r.top + r.height / 2,
          what: el.tagName.toLowerCase() + ' ' + (el.innerText || el.value || el.getAttribute('aria-label') || '').trim().slice(0, 60)}};
}})()"#
    );
    let found = page.eval(&script).await?;
    if found.is_null() {
        return Err(BoxError::Tool(format!(
            "unknown ref {reference}: the page has no element [{reference}] from your last \
             browser_snapshot (the page may have changed or navigated); take a new \
             browser_snapshot and use its refs"
        )));
    }
    Ok(found)
}

/// Clicks ref `reference` with the mouse, then lets the page settle.
pub async fn click(page: &mut Page, reference: u32) -> Result<String, BoxError> {
    let found = element(page, reference, false).await?;
    let (x, y) = (
        found["x"].as_f64().unwrap_or(0.0),
        found["y"].as_f64().unwrap_or(0.0),
    );
    page.click(x, y).await?;
    page.settle(Duration::from_secs(10)).await?;
    Ok(format!(
        "clicked [{reference}] ({}); take a browser_snapshot to see the result",
        found["what"].as_str().unwrap_or("")
    ))
}

/// Replaces the text of field `reference` with `text`, pressing Enter after when `submit`.
pub async fn type_text(
    page: &mut Page,
    reference: u32,
    text: &str,
    submit: bool,
) -> Result<String, BoxError> {
    let found = element(page, reference, true).await?;
    page.call("Input.insertText", json!({"text": text})).await?;
    if submit {
        page.enter().await?;
        page.settle(Duration::from_secs(10)).await?;
    }
    Ok(format!(
        "typed {} characters into [{reference}] ({}){}",
        text.chars().count(),
        found["what"].as_str().unwrap_or(""),
        if submit { " and pressed Enter" } else { "" }
    ))
}

/// Waits until the page shows `text` or has an element matching `selector`.
pub async fn wait(
    page: &mut Page,
    text: Option<&str>,
    selector: Option<&str>,
    limit: Duration,
) -> Result<Result<String, String>, BoxError> {
    let probe = match (text, selector) {
        (Some(text), _) => format!(
            "!!(document.body && document.body.innerText.includes({}))",
            Value::String(text.to_owned())
        ),
        (None, Some(selector)) => format!(
            "!!document.querySelector({})",
            Value::String(selector.to_owned())
        ),
        (None, None) => "document.readyState === 'complete'".to_owned(),
    };
    let what = text.map_or_else(
        || selector.map_or("the page to load".to_owned(), |s| format!("selector {s:?}")),
        |t| format!("text {t:?}"),
    );
    let started = tokio::time::Instant::now();
    loop {
        // A navigation in between destroys the context: that is not an answer yet.
        if let Ok(Value::Bool(true)) = page.eval(&probe).await {
            return Ok(Ok(format!(
                "found {what} after {:.1} s",
                started.elapsed().as_secs_f64()
            )));
        }
        if started.elapsed() >= limit {
            return Ok(Err(format!(
                "{what} did not appear within {:.1} s",
                limit.as_secs_f64()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A PNG of the page's viewport.
pub async fn screenshot(page: &mut Page) -> Result<Vec<u8>, BoxError> {
    use base64::Engine;
    let shot = page
        .call("Page.captureScreenshot", json!({"format": "png"}))
        .await?;
    let data = shot["data"].as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| BoxError::Browser(format!("the screenshot is not base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_addresses_are_navigated_to() {
        assert!(check_url("https://example.com/a?b").is_ok());
        assert!(check_url("http://127.0.0.1:8000/").is_ok());
        assert!(check_url("about:blank").is_ok());
        for bad in [
            "example.com",
            "not a url",
            "javascript:alert(1)",
            "http://",
            "",
        ] {
            let error = check_url(bad).unwrap_err();
            assert!(error.contains(&format!("{bad:?}")), "{bad}: {error}");
        }
    }
}
