//! Model providers: one trait-free enum over the two wire formats we speak.
//!
//! - OpenAI-compatible Chat Completions (`openai.rs`): OpenAI, xAI, Ollama, vLLM, llama.cpp,
//!   OpenRouter.
//! - Anthropic Messages (`anthropic.rs`).
//!
//! Both stream (SSE) and both carry tool calls. [`Provider::complete`] owns the retry policy
//! (connection errors, 429 and 5xx with backoff honouring `Retry-After`; an empty reply is
//! retried up to 3 times) and the timeouts (connect 15 s, whole request 180 s). A provider
//! failure is a [`ProviderError`] with the provider's own message; nothing here panics.

pub mod anthropic;
mod assemble;
mod attempt;
pub mod images;
pub mod openai;
mod retry;
mod sse;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// `POST {base_url}/chat/completions`
    Openai,
    /// `POST {base_url}/v1/messages`
    Anthropic,
}

/// A configured provider. Secrets are read from the environment at construction and never
/// logged or stored.
#[derive(Clone)]
pub struct ProviderConfig {
    /// For messages: the config entry's name.
    pub name: String,
    pub wire: WireFormat,
    /// e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`, `https://api.anthropic.com`
    pub base_url: String,
    /// The API key itself (read from the env var the config names). `None` for local servers.
    pub api_key: Option<String>,
    pub model: String,
    /// The model's context window, in tokens: every request is built to fit it.
    pub context_tokens: u64,
    pub retry: RetryPolicy,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish()
    }
}

/// Bounded retries with exponential backoff.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts for connection errors, 429 and 5xx (including the first).
    pub max_attempts: u32,
    /// First backoff; doubles each time, capped at `max_delay`. `Retry-After` wins when given.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Extra attempts when the model returns neither text nor tool calls.
    pub empty_reply_retries: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            empty_reply_retries: 3,
        }
    }
}

/// One tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// One tool call as the model made it. `arguments` is the raw JSON text (it may be invalid:
/// the loop tells the model so, as that call's result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The conversation, in provider-neutral form. The system prompt travels separately.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User {
        text: String,
    },
    /// `text` may be empty when the reply was only tool calls.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one earlier call (`call_id` names it).
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// An image (a screenshot) that goes with the result of `call_id`, right after it.
    /// `data` (base64) is filled by [`images::attach`] for the latest few; without it the
    /// image is left out of the request.
    Image {
        call_id: String,
        media_type: String,
        /// The file, relative to the task's workspace.
        path: String,
        data: Option<String>,
    },
}

/// One model request.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDef>,
}

/// The model's whole reply, after the stream ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelReply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`, `end_turn`, `tool_use`, ... as the provider said it.
    pub finish_reason: Option<String>,
    /// What the request cost, when the provider said so.
    pub usage: Option<TokenUsage>,
}

/// A request's tokens as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// Every input token, the cached ones included.
    pub input: u64,
    /// The part of `input` served from the provider's prompt cache.
    pub cached: u64,
    pub output: u64,
}

/// Why a model request failed (after retries).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with an error status; `message` is its body (or its error message).
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    /// The request or connection failed or timed out.
    #[error("{provider}: {message}")]
    Transport { provider: String, message: String },
    /// The stream or body could not be understood.
    #[error("{provider}: bad response: {message}")]
    Protocol { provider: String, message: String },
    /// Still empty after the retries.
    #[error("{provider}: the model returned an empty reply {attempts} times")]
    Empty { provider: String, attempts: u32 },
    #[error("cancelled")]
    Cancelled,
}

/// A ready provider client.
#[derive(Debug, Clone)]
pub struct Provider {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl Provider {
    /// Builds the HTTP client with the configured timeouts.
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| ProviderError::Transport {
                provider: config.name.clone(),
                message: e.to_string(),
            })?;
        Ok(Provider { config, http })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Sends `request`, streaming text deltas to `on_text` as they arrive, and returns the
    /// whole reply. Retries per the policy; returns `Cancelled` promptly when `cancel` fires.
    pub async fn complete(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelReply, ProviderError> {
        // One attempt is the wire format's; the retry loop around it is `retry.rs`, handed
        // the attempt so that it names no wire file (and none of them names it).
        let once: retry::Once = match self.config.wire {
            WireFormat::Openai => |p, r, t| Box::pin(openai::complete_once(p, r, t)),
            WireFormat::Anthropic => |p, r, t| Box::pin(anthropic::complete_once(p, r, t)),
        };
        retry::complete(self, once, request, cancel, on_text).await
    }
}
