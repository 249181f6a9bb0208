//! The retry loop around one provider attempt. (Stub: being written.)

use tokio_util::sync::CancellationToken;

use super::{ModelReply, ModelRequest, Provider, ProviderError};

pub(super) async fn complete(
    provider: &Provider,
    _request: &ModelRequest,
    _cancel: &CancellationToken,
    _on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ModelReply, ProviderError> {
    Err(ProviderError::Protocol {
        provider: provider.config.name.clone(),
        message: "not implemented yet".into(),
    })
}
