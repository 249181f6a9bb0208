//! `GET /`: the dashboard page (`web/index.html`, compiled in).

use axum::response::Html;

pub async fn index() -> Html<&'static str> {
    Html(include_str!("../../../../web/index.html"))
}
