//! Memories: private to their agent, searched by any word, keys replaced, search syntax in
//! a query is just words.

use super::on_both;

on_both! {
    async fn memories_are_private_searchable_and_keyed(db: Db) {
        let store = db.store().await;
        let a = store.create_agent("a", "", None, None).await.unwrap().id;
        let b = store.create_agent("b", "", None, None).await.unwrap().id;
        store.memory_write(a, Some("wifi"), "the wifi password is hunter2").await.unwrap();
        store.memory_write(a, None, "deploys happen on Fridays").await.unwrap();
        store.memory_write(b, None, "b likes green tea").await.unwrap();
        let found = store.memory_search(a, "WiFi password", 10).await.unwrap();
        assert_eq!(found, [(Some("wifi".to_owned()), "the wifi password is hunter2".to_owned())]);
        assert_eq!(store.memory_search(a, "tea fridays", 10).await.unwrap().len(), 1);
        assert!(store.memory_search(b, "hunter2 wifi", 10).await.unwrap().is_empty());
        for hostile in ["\"unbalanced AND (", "a | b & !c", "*", "NEAR(x y)", "'"] {
            store.memory_search(a, hostile, 10).await.unwrap();
        }
        assert!(store.memory_search(a, "   ", 10).await.unwrap().is_empty());
        store.memory_write(a, Some("wifi"), "now correcthorse").await.unwrap();
        let found = store.memory_search(a, "correcthorse hunter2", 10).await.unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(!store.memory_forget(b, "wifi").await.unwrap());
        assert!(store.memory_forget(a, "wifi").await.unwrap());
        assert!(store.memory_search(a, "correcthorse", 10).await.unwrap().is_empty());
    }
}
