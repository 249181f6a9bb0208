//! An agent's conversation: its lines across tasks, searched by word, cut by `clear`.

use lazyboy_protocol::EventBody;

use super::on_both;
use crate::store::conversation::Query;

on_both! {
    async fn the_conversation_is_read_searched_and_cleared(db: Db) {
        let store = db.store().await;
        let agent = store.create_agent("ops", "", None, None).await.unwrap().id;
        let other = store.create_agent("other", "", None, None).await.unwrap().id;
        let task = store.create_task("ops", "rotate the certificates", "/w").await.unwrap();
        let say = |text: &str| EventBody::AgentMessage { text: text.into() };
        store.append_to_task(&task, &say("the certificates are rotated")).await.unwrap();
        store.append_to_agent("ops", &EventBody::UserMessage { text: "thanks, now the dns".into() })
            .await.unwrap();
        let child = store.create_subagent(&task, "a subagent's words", None).await.unwrap();
        store.append_to_task(&child, &say("hidden from the conversation")).await.unwrap();
        store.append_to_agent("other", &EventBody::UserMessage { text: "certificates elsewhere".into() })
            .await.unwrap();
        let lines = store.conversation_lines(agent, i64::MAX, 10).await.unwrap();
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["rotate the certificates", "the certificates are rotated", "thanks, now the dns"]);
        assert_eq!((lines[0].who, lines[1].who), ("person", "agent"));

        let search = |words: &str, include_cleared| Query {
            words: Some(words.into()),
            before_seq: None,
            limit: 10,
            include_cleared,
        };
        let found = store.search_conversation(agent, &search("CERTIFICATES", false)).await.unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].seq > found[1].seq, "newest first");
        assert!(store.search_conversation(other, &search("dns", false)).await.unwrap().is_empty());
        store.search_conversation(agent, &search("\"x\" OR (y", false)).await.unwrap();

        let (_, cleared) = store.append_to_agent("ops", &EventBody::ConversationCleared {}).await.unwrap();
        assert_eq!(store.generation_start(agent).await.unwrap(), cleared.seq);
        assert!(store.conversation_lines(agent, i64::MAX, 10).await.unwrap().is_empty());
        assert!(store.search_conversation(agent, &search("dns", false)).await.unwrap().is_empty());
        assert_eq!(store.search_conversation(agent, &search("dns", true)).await.unwrap().len(), 1);
        let summary = EventBody::Summary { upto_seq: cleared.seq, text: "so far".into() };
        store.append_to_agent("ops", &summary).await.unwrap();
        assert_eq!(store.agent_summary(agent).await.unwrap(), Some((cleared.seq, "so far".into())));
        let (kind, data) = store.agent_event(agent, cleared.seq).await.unwrap().unwrap();
        assert_eq!((kind.as_str(), data), ("conversation_cleared", serde_json::json!({})));
        assert!(store.agent_event(other, cleared.seq).await.unwrap().is_none());
    }
}
