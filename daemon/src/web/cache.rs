//! Pages fetched in the last [`TTL`], by URL, so an agent that reads the same page twice in
//! a task (or two agents reading one page) costs one request. Bounded: past [`CAPACITY`]
//! entries the oldest goes. A lookup takes one short mutex hold and clones an `Arc`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::fetch::Page;

/// How long a fetched page is served from memory (seed 004: ten minutes).
pub const TTL: Duration = Duration::from_secs(600);

/// At most this many pages are kept.
pub const CAPACITY: usize = 256;

pub struct Cache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, Arc<Page>)>>,
}

impl Cache {
    pub fn new(ttl: Duration) -> Cache {
        Cache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The page and its age, if fetched less than the TTL ago.
    pub fn get(&self, url: &str) -> Option<(Arc<Page>, Duration)> {
        let entries = self.entries.lock().ok()?;
        let (at, page) = entries.get(url)?;
        let age = at.elapsed();
        (age < self.ttl).then(|| (page.clone(), age))
    }

    pub fn put(&self, url: String, page: Arc<Page>) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let ttl = self.ttl;
        entries.retain(|_, (at, _)| at.elapsed() < ttl);
        if entries.len() >= CAPACITY
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(url, (Instant::now(), page));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Arc<Page> {
        Arc::new(Page {
            url: "u".into(),
            status: 200,
            content_type: "text/plain".into(),
            text: text.into(),
            bytes: text.len(),
            truncated: false,
            redirects: vec![],
        })
    }

    #[test]
    fn pages_expire_and_the_oldest_goes_first() {
        let cache = Cache::new(Duration::from_secs(600));
        cache.put("a".into(), page("A"));
        assert_eq!(cache.get("a").unwrap().0.text, "A");
        assert!(cache.get("b").is_none());
        for i in 0..CAPACITY {
            cache.put(format!("k{i}"), page("x"));
        }
        assert!(cache.get("a").is_none(), "the oldest was evicted");
        assert!(cache.get("k0").is_some());
        let expired = Cache::new(Duration::ZERO);
        expired.put("a".into(), page("A"));
        assert!(expired.get("a").is_none());
    }
}
