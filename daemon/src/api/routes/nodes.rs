//! `GET /api/nodes`: the daemons sharing this daemon's database, each with its heartbeat and
//! the tasks it runs.

use axum::Json;
use axum::extract::State;
use lazyboy_protocol::NodeList;

use crate::api::AppState;
use crate::api::error::ApiError;
use crate::store::now_ms;

pub async fn list(State(state): State<AppState>) -> Result<Json<NodeList>, ApiError> {
    let nodes = state.store.nodes().await?;
    let (now, ttl) = (now_ms(), state.store.fleet().lease_ttl_ms);
    Ok(Json(NodeList {
        this: state.store.fleet().node.clone(),
        nodes: nodes.iter().map(|n| n.to_api(now, ttl)).collect(),
    }))
}
