//! `web_search` providers behind one interface ([`Search::run`]): the query goes to the
//! configured provider, the answer comes back as results (title, URL, snippet) and, where the
//! provider writes one, a short answer.
//!
//! ```toml
//! [web_search]
//! provider = "searxng"              # or "brave", "xai", "gateway"
//! url = "http://127.0.0.1:8888"     # searxng, gateway: required; brave, xai: their API
//! api_key_env = "BRAVE_API_KEY"     # the NAME of the variable with the key (defaults:
//!                                   #  brave BRAVE_API_KEY, xai XAI_API_KEY,
//!                                   #  gateway LAZYBOY_WEB_TOKEN, searxng none)
//! model = "grok-4"                  # xai: required; gateway: sent as modelId
//! timeout_secs = 30
//! ```
//!
//! Wire formats: SearXNG's JSON API (`GET /search?q=&format=json`), Brave's Web Search API
//! (`GET /web/search`, `X-Subscription-Token`), xAI's Responses API with the `web_search`
//! tool (`POST /responses`; results are the answer's `url_citation` annotations), and the
//! gateway's JSON Connect `POST /aiserver.v1.AiService/RunWebSearch` (`searchTerm`,
//! `explanation`, `modelId` → `answer`, `documents`). Keys are read from the environment at
//! each call and never stored or logged; the provider's URL is the person's choice, so it is
//! not subject to `web_fetch`'s address policy.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

/// Which provider answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Searxng,
    Brave,
    Xai,
    Gateway,
}

/// `[web_search]` in `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSection {
    pub provider: Option<ProviderKind>,
    pub url: Option<String>,
    pub api_key_env: Option<String>,
    pub model: Option<String>,
    pub timeout_secs: Option<u64>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchAnswer {
    /// The provider's own summary (xAI, the gateway), if any.
    pub answer: Option<String>,
    pub hits: Vec<SearchHit>,
}

/// A configured provider (its key is never in it: only the variable's name).
#[derive(Debug)]
pub struct Search {
    pub kind: ProviderKind,
    url: String,
    key_env: Option<String>,
    model: Option<String>,
    http: reqwest::Client,
}

/// How to turn web search on, for errors and the doctor.
pub const HOW_TO_ENABLE: &str = "add a [web_search] section to config.toml with provider = \
    \"searxng\" (and url = your instance), \"brave\" (key in BRAVE_API_KEY), \"xai\" (key in \
    XAI_API_KEY, and model) or \"gateway\" (url); see the README";

impl Search {
    /// The provider `[web_search]` names; `None` when there is no provider; an error for a
    /// section that cannot work (a missing url or model).
    pub fn from_section(section: &WebSearchSection) -> Result<Option<Search>, String> {
        let Some(kind) = section.provider else {
            return Ok(None);
        };
        let required = |what: &str| format!("[web_search] provider = {kind:?} needs {what}");
        let url = match (kind, section.url.clone()) {
            (_, Some(url)) => url,
            (ProviderKind::Brave, None) => "https://api.search.brave.com/res/v1".to_owned(),
            (ProviderKind::Xai, None) => "https://api.x.ai/v1".to_owned(),
            (_, None) => return Err(required("url")),
        };
        let key_env = section.api_key_env.clone().or(match kind {
            ProviderKind::Brave => Some("BRAVE_API_KEY".to_owned()),
            ProviderKind::Xai => Some("XAI_API_KEY".to_owned()),
            ProviderKind::Gateway => Some("LAZYBOY_WEB_TOKEN".to_owned()),
            ProviderKind::Searxng => None,
        });
        if kind == ProviderKind::Xai && section.model.is_none() {
            return Err(required(
                "model (an xAI model that has the web_search tool)",
            ));
        }
        let timeout = Duration::from_secs(section.timeout_secs.unwrap_or(30).max(1));
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Some(Search {
            kind,
            url: url.trim_end_matches('/').to_owned(),
            key_env,
            model: section.model.clone(),
            http,
        }))
    }

    /// The environment variable names holding keys (never to reach agents' commands).
    pub fn key_env(&self) -> Option<&str> {
        self.key_env.as_deref()
    }

    /// Runs `query`, at most `limit` results.
    pub async fn run(&self, query: &str, limit: usize) -> Result<SearchAnswer, String> {
        let key = self
            .key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
        let request = match self.kind {
            ProviderKind::Searxng => self
                .http
                .get(format!("{}/search", self.url))
                .query(&[("q", query), ("format", "json")]),
            ProviderKind::Brave => {
                let key = key.clone().ok_or_else(|| self.missing_key())?;
                self.http
                    .get(format!("{}/web/search", self.url))
                    .query(&[("q", query), ("count", &limit.to_string())])
                    .header("X-Subscription-Token", key)
            }
            ProviderKind::Xai => {
                let key = key.clone().ok_or_else(|| self.missing_key())?;
                self.http
                    .post(format!("{}/responses", self.url))
                    .bearer_auth(key)
                    .json(&json!({
                        "model": self.model,
                        "input": [{"role": "user", "content": format!(
                            "Search the web for: {query}\nAnswer briefly and cite your sources.")}],
                        "tools": [{"type": "web_search"}],
                    }))
            }
            ProviderKind::Gateway => self
                .http
                .post(format!("{}/aiserver.v1.AiService/RunWebSearch", self.url))
                .header("Connect-Protocol-Version", "1")
                .json(&json!({
                    "searchTerm": query,
                    "explanation": "an agent's web_search tool call",
                    "modelId": self.model.clone().unwrap_or_default(),
                })),
        };
        // The gateway's token and SearXNG's optional one go as a bearer token.
        let request = match (self.kind, &key) {
            (ProviderKind::Gateway | ProviderKind::Searxng, Some(key)) => request.bearer_auth(key),
            _ => request,
        };
        let response = request
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("{:?} search failed: {e}", self.kind))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            let excerpt: String = body.chars().take(300).collect();
            return Err(format!("{:?} search: HTTP {status}: {excerpt}", self.kind));
        }
        let json: Value = serde_json::from_str(&body)
            .map_err(|e| format!("{:?} search: the answer is not JSON: {e}", self.kind))?;
        let mut answer = match self.kind {
            ProviderKind::Searxng => searxng(&json),
            ProviderKind::Brave => brave(&json),
            ProviderKind::Xai => xai(&json),
            ProviderKind::Gateway => gateway(&json),
        };
        answer.hits.truncate(limit);
        Ok(answer)
    }

    fn missing_key(&self) -> String {
        format!(
            "web_search ({:?}) has no key: the daemon's environment has no {}",
            self.kind,
            self.key_env.as_deref().unwrap_or("key variable")
        )
    }
}

fn text(value: &Value, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn hits(items: Option<&Value>, title: &[&str], url: &[&str], snippet: &[&str]) -> Vec<SearchHit> {
    items
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| SearchHit {
            title: text(item, title),
            url: text(item, url),
            snippet: text(item, snippet),
        })
        .filter(|hit| !hit.url.is_empty())
        .collect()
}

/// SearXNG: `{"results": [{"title","url","content"}], "answers": [...]}`.
fn searxng(json: &Value) -> SearchAnswer {
    let answer = json
        .get("answers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|a| {
            a.as_str()
                .map(str::to_owned)
                .or_else(|| Some(text(a, &["answer"])))
        })
        .filter(|a| !a.is_empty());
    SearchAnswer {
        answer,
        hits: hits(json.get("results"), &["title"], &["url"], &["content"]),
    }
}

/// Brave: `{"web": {"results": [{"title","url","description"}]}}`.
fn brave(json: &Value) -> SearchAnswer {
    SearchAnswer {
        answer: None,
        hits: hits(
            json.pointer("/web/results"),
            &["title"],
            &["url"],
            &["description"],
        ),
    }
}

/// xAI Responses: the message's `output_text`, and its `url_citation` annotations as hits
/// (the cited span as the snippet); top-level `citations` URLs fill in if there are none.
fn xai(json: &Value) -> SearchAnswer {
    let mut answer = String::new();
    let mut found: Vec<SearchHit> = Vec::new();
    let outputs = json
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for part in outputs.filter(|o| o["type"] == "message") {
        for content in part["content"].as_array().into_iter().flatten() {
            if content["type"] != "output_text" {
                continue;
            }
            let text_part = content["text"].as_str().unwrap_or_default();
            for note in content["annotations"].as_array().into_iter().flatten() {
                if note["type"] != "url_citation" {
                    continue;
                }
                let url = note["url"].as_str().unwrap_or_default().to_owned();
                if url.is_empty() || found.iter().any(|h| h.url == url) {
                    continue;
                }
                let span = match (note["start_index"].as_u64(), note["end_index"].as_u64()) {
                    (Some(s), Some(e)) => text_part
                        .chars()
                        .skip(s as usize)
                        .take(e.saturating_sub(s) as usize)
                        .collect(),
                    _ => String::new(),
                };
                found.push(SearchHit {
                    title: note["title"].as_str().unwrap_or_default().to_owned(),
                    url,
                    snippet: span,
                });
            }
            answer.push_str(text_part);
        }
    }
    if found.is_empty() {
        for url in json["citations"].as_array().into_iter().flatten() {
            if let Some(url) = url.as_str() {
                found.push(SearchHit {
                    title: String::new(),
                    url: url.to_owned(),
                    snippet: String::new(),
                });
            }
        }
    }
    SearchAnswer {
        answer: (!answer.trim().is_empty()).then(|| answer.trim().to_owned()),
        hits: found,
    }
}

/// The gateway: `{"answer": "...", "documents": [{"title","url","content"}]}` (field names
/// read leniently: `link`/`uri` for the URL, `snippet`/`chunk`/`text` for the snippet).
fn gateway(json: &Value) -> SearchAnswer {
    SearchAnswer {
        answer: Some(text(json, &["answer"])).filter(|a| !a.is_empty()),
        hits: hits(
            json.get("documents"),
            &["title", "name"],
            &["url", "link", "uri"],
            &["content", "snippet", "chunk", "text"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wire_format_reads_into_hits() {
        let s = searxng(&json!({"results": [
            {"title": "A", "url": "https://a.example/", "content": "about a"},
            {"title": "no url"}], "answers": ["42"]}));
        assert_eq!(s.answer.as_deref(), Some("42"));
        assert_eq!(s.hits.len(), 1);
        assert_eq!(s.hits[0].snippet, "about a");
        let b = brave(&json!({"web": {"results": [
            {"title": "B", "url": "https://b.example/", "description": "about b"}]}}));
        assert_eq!(b.hits[0].title, "B");
        let x = xai(&json!({"output": [
            {"type": "web_search_call", "status": "completed"},
            {"type": "message", "content": [{"type": "output_text", "text": "Rust is fast.",
                "annotations": [{"type": "url_citation", "url": "https://r.example/",
                    "title": "R", "start_index": 0, "end_index": 4}]}]}]}));
        assert_eq!(x.answer.as_deref(), Some("Rust is fast."));
        assert_eq!(x.hits[0].snippet, "Rust");
        let g = gateway(&json!({"answer": "yes", "documents": [
            {"title": "G", "link": "https://g.example/", "chunk": "about g"}]}));
        assert_eq!(g.hits[0].url, "https://g.example/");
        assert_eq!(g.hits[0].snippet, "about g");
    }

    #[test]
    fn sections_that_cannot_work_are_refused() {
        let none = Search::from_section(&WebSearchSection::default()).unwrap();
        assert!(none.is_none());
        let searx = WebSearchSection {
            provider: Some(ProviderKind::Searxng),
            ..Default::default()
        };
        assert!(Search::from_section(&searx).unwrap_err().contains("url"));
        let xai = WebSearchSection {
            provider: Some(ProviderKind::Xai),
            ..Default::default()
        };
        assert!(Search::from_section(&xai).unwrap_err().contains("model"));
        let brave = WebSearchSection {
            provider: Some(ProviderKind::Brave),
            ..Default::default()
        };
        let brave = Search::from_section(&brave).unwrap().unwrap();
        assert_eq!(brave.key_env(), Some("BRAVE_API_KEY"));
    }
}
