//! Which agents an MCP client may see and use.
//!
//! On TCP the listener's scope is `[mcp_server] agents` (default: all); on the local socket
//! it is everything, narrowed by the `lazyboy-mcp-agents` header that `lazyboy mcp serve
//! --agents a,b` sends. The header only ever narrows, on either listener. An agent out of
//! scope is hidden: asking for it, or for one of its tasks, reads as "no such agent" / "no
//! such task", so a client cannot tell what it is not shown.

use std::collections::BTreeSet;

use axum::http::request::Parts;
use lazyboy_protocol::mcp_server::SCOPE_HEADER;

/// The agents a request may reach (`None`: all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope(Option<BTreeSet<String>>);

impl Scope {
    /// The scope of a request on a listener whose own scope is `listener`.
    pub fn of(listener: Option<&[String]>, parts: Option<&Parts>) -> Scope {
        let mut scope = Scope(listener.map(|names| names.iter().cloned().collect()));
        let header = parts.and_then(|p| p.headers.get(SCOPE_HEADER));
        if let Some(value) = header {
            // A header that is not text narrows to nothing rather than widening to all.
            let named: BTreeSet<String> = value
                .to_str()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            scope = Scope(Some(match scope.0 {
                Some(outer) => outer.intersection(&named).cloned().collect(),
                None => named,
            }));
        }
        scope
    }

    pub fn allows(&self, agent: &str) -> bool {
        self.0.as_ref().is_none_or(|names| names.contains(agent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(header: Option<&str>) -> Parts {
        let mut request = axum::http::Request::builder();
        if let Some(value) = header {
            request = request.header(SCOPE_HEADER, value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn the_header_only_narrows() {
        let all = Scope::of(None, Some(&parts(None)));
        assert!(all.allows("anyone"));
        let a = Scope::of(None, Some(&parts(Some(" a , "))));
        assert!(a.allows("a") && !a.allows("b"));
        let listener = ["a".to_owned(), "b".to_owned()];
        let both = Scope::of(Some(&listener), Some(&parts(Some("b,c"))));
        assert!(both.allows("b") && !both.allows("a") && !both.allows("c"));
        let none = Scope::of(None, Some(&parts(Some(""))));
        assert!(!none.allows("a"));
        let config = Scope::of(Some(&listener), None);
        assert!(config.allows("a") && !config.allows("c"));
    }
}
