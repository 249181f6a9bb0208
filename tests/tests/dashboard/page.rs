//! The page itself: model text renders inert, the app installs and opens offline, and while
//! hidden it notifies and catches up when shown.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_with_html_and_script_links_renders_inert() {
    let hostile = "<script>window.__pwned = 1</script> and <img src=x onerror=\"window.__pwned = 2\"> \
                   then [click me](javascript:window.__pwned=3) or [docs](https://example.com/docs) \
                   and <b>bold?</b>";
    let browser = Browser::start().await;
    for size in SIZES {
        let mock = MockModel::start().await;
        mock.push(Reply::tool_call(
            "m1",
            "send_message",
            json!({ "text": hostile }),
        ));
        mock.push(Reply::text(hostile));
        let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
        lazyboy_tests::add_agent(&daemon, "writer").await;
        let task = lazyboy_tests::create_task(&daemon, "writer", "say it", None).await;
        wait_task_finished(&daemon, &task).await;
        browser.set_viewport(size).await;
        browser.goto(&daemon.login_url().await).await;
        browser
            .click("//nav[@aria-label='Agents']//button[@data-name='writer']")
            .await;
        let report = browser
            .wait_js(
                "the hostile bubble and verdict",
                r#"const log = document.querySelector('[role=log]');
                   const bubble = log.querySelector('lb-message.agent .bubble');
                   const verdict = log.querySelector('lb-verdict');
                   if (!bubble || !verdict) return null;
                   return {
                     text: bubble.textContent,
                     elements: [...log.querySelectorAll('script, img, b, iframe, [onerror]')].length,
                     links: [...log.querySelectorAll('a')].map((a) => a.href),
                     pwned: window.__pwned ?? null,
                   };"#,
            )
            .await;
        assert_eq!(report["elements"], 0, "{report}");
        assert_eq!(
            report["links"],
            json!(["https://example.com/docs", "https://example.com/docs"]),
            "only the https link is a link (in the bubble and the verdict)"
        );
        let text = report["text"].as_str().unwrap();
        assert!(
            text.contains("<script>window.__pwned = 1</script>")
                && text.contains("<img src=x onerror=")
                && text.contains("[click me](javascript:window.__pwned=3)"),
            "the markup shows as text: {text}"
        );
        // Clicking where the javascript: link would be runs nothing either.
        browser
            .click("//*[@role='log']//lb-message[contains(@class,'agent')]//div[contains(@class,'bubble')]")
            .await;
        let pwned = browser.eval("return window.__pwned ?? null", vec![]).await;
        assert_eq!(pwned, serde_json::Value::Null, "at {}", size.name());
        daemon.stop();
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_installs_and_opens_offline() {
    let browser = Browser::start().await;
    for size in SIZES {
        let mut daemon = TestDaemon::start().await;
        daemon.pin_port();
        browser.set_viewport(size).await;
        // localhost (not 127.0.0.1): the name a person types, and a secure context too.
        let url = daemon.login_url().await.replace("127.0.0.1", "localhost");
        browser.goto(&url).await;
        let worker = browser
            .wait_js(
                "the service worker to be active",
                "return navigator.serviceWorker.controller?.scriptURL ?? null",
            )
            .await;
        assert!(worker.as_str().unwrap().ends_with("/sw.js"), "{worker}");

        // The manifest as Chromium parsed it: no errors, the icons an install needs.
        let manifest = browser.cdp("Page.getAppManifest", json!({})).await;
        assert_eq!(manifest["errors"], json!([]), "{manifest}");
        let parsed: serde_json::Value =
            serde_json::from_str(manifest["data"].as_str().unwrap()).unwrap();
        assert_eq!(parsed["display"], "standalone");
        assert_eq!(parsed["start_url"], "/");
        let icons: Vec<(String, String)> = parsed["icons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["sizes"].as_str().unwrap().into(),
                    i["purpose"].as_str().unwrap().into(),
                )
            })
            .collect();
        for want in [
            ("192x192", "any"),
            ("512x512", "any"),
            ("512x512", "maskable"),
        ] {
            assert!(
                icons.contains(&(want.0.into(), want.1.into())),
                "{icons:?} lacks {want:?}"
            );
        }
        for icon in parsed["icons"].as_array().unwrap() {
            let src = icon["src"].as_str().unwrap();
            let png = daemon.http.get(daemon.url(src)).send().await.unwrap();
            assert_eq!(png.headers()["content-type"], "image/png");
            let bytes = png.bytes().await.unwrap();
            let size: u32 = icon["sizes"]
                .as_str()
                .unwrap()
                .split('x')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            assert_eq!(width, size, "{src} is {size} px wide");
        }
        // Chromium's own installability criteria hold.
        let installable = browser.cdp("Page.getInstallabilityErrors", json!({})).await;
        assert_eq!(
            installable["installabilityErrors"],
            json!([]),
            "{installable}"
        );
        for tag in [
            "meta[name=apple-mobile-web-app-capable]",
            "link[rel=apple-touch-icon]",
            "meta[name=theme-color]",
        ] {
            let found = browser
                .eval(&format!("return !!document.querySelector('{tag}')"), vec![])
                .await;
            assert_eq!(found, true, "iOS home-screen tag {tag}");
        }

        // Offline: the shell opens from the worker's cache and says so; when the daemon is
        // back, it reconnects by itself.
        daemon.terminate();
        browser.client.refresh().await.unwrap();
        browser
            .wait_js(
                "the offline shell",
                "return document.querySelector('lb-connection')?.dataset.status === 'unreachable'
                   && document.querySelector('lb-connection').textContent.includes('daemon unreachable')",
            )
            .await;
        daemon.restart().await;
        browser
            .wait_js(
                "the page to reconnect",
                "return document.querySelector('lb-connection').dataset.status === 'live'
                  && document.querySelector('nav button.agent[data-name=default]') !== null",
            )
            .await;
        daemon.stop();
    }
    browser.close().await;
}

/// Makes the page believe it is hidden (`hidden` true) or shown, as switching away from the
/// tab does; headless Chromium's one tab is always visible otherwise.
async fn set_hidden(browser: &Browser, hidden: bool) {
    browser
        .eval(
            "const hidden = arguments[0];
             for (const [key, value] of [['hidden', hidden], ['visibilityState', hidden ? 'hidden' : 'visible']]) {
               Object.defineProperty(document, key, { configurable: true, get: () => value });
             }
             document.dispatchEvent(new Event('visibilitychange'));",
            vec![json!(hidden)],
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_hidden_it_notifies_and_catches_up_when_shown() {
    let browser = Browser::start().await;
    for size in SIZES {
        let mock = MockModel::start().await;
        mock.push(Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": "working on it"}),
        ));
        mock.push(Reply::tool_call(
            "q1",
            "request_user_input",
            json!({"question": "Ready to pay?", "options": ["Yes"]}),
        ));
        mock.push(Reply::text("paid"));
        let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
        lazyboy_tests::add_agent(&daemon, "payer").await;
        let url = daemon.login_url().await.replace("127.0.0.1", "localhost");
        let origin = daemon.url("").replace("127.0.0.1", "localhost");
        browser
            .cdp(
                "Browser.grantPermissions",
                json!({"permissions": ["notifications"], "origin": origin}),
            )
            .await;
        browser.set_viewport(size).await;
        browser.goto(&url).await;
        browser
            .click("//nav[@aria-label='Agents']//button[@data-name='payer']")
            .await;
        browser
            .wait_js(
                "the worker and the stream",
                "return navigator.serviceWorker.controller !== null
                   && document.querySelector('lb-connection').dataset.status === 'live'",
            )
            .await;
        set_hidden(&browser, true).await;
        let task = lazyboy_tests::create_task(&daemon, "payer", "pay the bill", None).await;
        // Hidden: the title counts what needs the person, a notification says it, and
        // nothing is rendered yet.
        browser
            .wait_js("the title count", "return document.title === '(1) LazyBoy'")
            .await;
        // The notification is shown asynchronously after the title changes: wait for it.
        let give_up = std::time::Instant::now() + lazyboy_tests::browser::DEADLINE;
        let shown = loop {
            let shown = browser
                .client
                .execute_async(
                    "const done = arguments[0];
                     navigator.serviceWorker.ready.then((r) => r.getNotifications())
                       .then((list) => done(list.map((n) => [n.title, n.body])));",
                    vec![],
                )
                .await
                .unwrap();
            if shown != json!([]) || std::time::Instant::now() > give_up {
                break shown;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        // If none came, say what the page could see (a failure seen once in a full run, not
        // reproduced alone).
        let seen = browser
            .eval(
                "return [Notification.permission, String(navigator.serviceWorker.controller?.state),
                         document.visibilityState, document.title]",
                vec![],
            )
            .await;
        assert_eq!(
            shown,
            json!([["payer asks", "Ready to pay?"]]),
            "at {}: permission, worker, visibility, title: {seen}",
            size.name()
        );
        let rendered = browser
            .eval(
                "return document.querySelector('[role=log]').textContent.includes('working on it')",
                vec![],
            )
            .await;
        assert_eq!(rendered, false, "nothing is rendered while hidden");
        // Shown again: the title resets and the page catches up.
        set_hidden(&browser, false).await;
        wait_view(&browser, "the catch-up", |v| {
            (v.agent_bubbles.contains(&"working on it".to_owned())
                && v.questions.iter().any(|q| q.label == "Ready to pay?"))
            .then_some(())
        })
        .await;
        assert_eq!(
            browser.eval("return document.title", vec![]).await,
            "LazyBoy"
        );
        browser
            .click("//*[@role='log']//button[normalize-space()='Yes']")
            .await;
        assert_eq!(
            wait_task_finished(&daemon, &task).await.verdict,
            Some(Verdict::Answer)
        );
        daemon.stop();
    }
    browser.close().await;
}
