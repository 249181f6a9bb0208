//! Counting a request's tokens: exactly with the model family's tokenizer where we have it
//! (OpenAI's, through `tiktoken-rs`), else a calibrated estimate.
//!
//! The estimate starts at one token per 3.5 bytes (a little pessimistic for English, about
//! right for code and JSON) and is corrected by what providers report: each reply's input
//! count over our estimate of the same request moves the factor (a moving average, clamped
//! to 0.5–3), so a model whose tokenizer is denser than the guess soon gets smaller requests.
//! The factor is per counter, and a turn keeps one counter per provider.

use std::sync::atomic::{AtomicU64, Ordering};

use tiktoken_rs::CoreBPE;

use crate::providers::{Message, ToolDef};

/// Tokens each message costs on top of its text (role, separators), and each tool call.
const PER_MESSAGE: u64 = 4;
const PER_CALL: u64 = 8;
/// The estimate's starting point: bytes per token.
const BYTES_PER_TOKEN: f64 = 3.5;

/// How a model's tokens are counted.
pub struct Counter {
    bpe: Option<&'static CoreBPE>,
    /// The estimate's correction, as f64 bits (1.0 until a provider reports usage).
    factor: AtomicU64,
}

impl Counter {
    /// The counter for `model`: the real tokenizer for OpenAI's families, else the estimate.
    pub fn for_model(model: &str) -> Counter {
        let name = model.rsplit('/').next().unwrap_or(model);
        let bpe = if name.starts_with("gpt-4o")
            || name.starts_with("gpt-4.1")
            || name.starts_with("gpt-4.5")
            || name.starts_with("gpt-5")
            || name.starts_with("o1")
            || name.starts_with("o3")
            || name.starts_with("o4")
            || name.starts_with("chatgpt-4o")
        {
            Some(tiktoken_rs::o200k_base_singleton())
        } else if name.starts_with("gpt-4") || name.starts_with("gpt-3.5") {
            Some(tiktoken_rs::cl100k_base_singleton())
        } else {
            None
        };
        Counter {
            bpe,
            factor: AtomicU64::new(1.0f64.to_bits()),
        }
    }

    /// Whether counts are exact (the model's own tokenizer).
    pub fn exact(&self) -> bool {
        self.bpe.is_some()
    }

    /// Tokens of `text`.
    pub fn text(&self, text: &str) -> u64 {
        match self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            None => {
                let factor = f64::from_bits(self.factor.load(Ordering::Relaxed));
                ((text.len() as f64 / BYTES_PER_TOKEN) * factor).ceil() as u64
            }
        }
    }

    /// Tokens of one message of the conversation.
    pub fn message(&self, message: &Message) -> u64 {
        PER_MESSAGE
            + match message {
                Message::User { text } => self.text(text),
                Message::Assistant { text, tool_calls } => {
                    self.text(text)
                        + tool_calls
                            .iter()
                            .map(|c| PER_CALL + self.text(&c.name) + self.text(&c.arguments))
                            .sum::<u64>()
                }
                Message::ToolResult { name, content, .. } => self.text(name) + self.text(content),
                // Only the latest few images are sent: `Window::fit` reserves their tokens.
                Message::Image { .. } => 0,
            }
    }

    /// Tokens of the tool definitions (sent with every request).
    pub fn tools(&self, tools: &[ToolDef]) -> u64 {
        tools
            .iter()
            .map(|t| {
                PER_CALL
                    + self.text(&t.name)
                    + self.text(&t.description)
                    + self.text(&t.parameters.to_string())
            })
            .sum()
    }

    /// A provider reported `reported` input tokens for a request we counted as `counted`:
    /// the estimate moves toward the truth (exact counters need no correction).
    pub fn calibrate(&self, counted: u64, reported: u64) {
        if self.bpe.is_some() || counted < 64 || reported == 0 {
            return;
        }
        let old = f64::from_bits(self.factor.load(Ordering::Relaxed));
        let seen = old * reported as f64 / counted as f64;
        let new = (0.7 * old + 0.3 * seen).clamp(0.5, 3.0);
        self.factor.store(new.to_bits(), Ordering::Relaxed);
    }
}

/// The context window of `model` when the config does not say: OpenAI's published sizes
/// (from `tiktoken-rs`), the other big families' documented ones, else 128k.
pub fn default_context(model: &str) -> u64 {
    let name = model.rsplit('/').next().unwrap_or(model);
    if let Some(size) = tiktoken_rs::model::get_context_size(name)
        .filter(|_| name.contains("gpt") || name.starts_with('o'))
    {
        return size as u64;
    }
    if name.starts_with("claude") {
        200_000
    } else if name.starts_with("grok-4") {
        256_000
    } else if name.starts_with("grok") {
        131_072
    } else if name.starts_with("gemini") {
        1_000_000
    } else {
        128_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_are_counted_exactly_and_others_estimated() {
        let exact = Counter::for_model("gpt-4o-mini");
        assert!(exact.exact());
        assert_eq!(exact.text("hello world"), 2);
        let guess = Counter::for_model("qwen2.5-coder:7b");
        assert!(!guess.exact());
        assert_eq!(guess.text(&"x".repeat(350)), 100);
    }

    #[test]
    fn the_estimate_moves_toward_what_providers_report() {
        let guess = Counter::for_model("llama3");
        let text = "y".repeat(3500);
        assert_eq!(guess.text(&text), 1000);
        for _ in 0..20 {
            guess.calibrate(guess.text(&text), 2000);
        }
        let now = guess.text(&text);
        assert!((1900..=2100).contains(&now), "{now}");
        // Nonsense reports are clamped.
        for _ in 0..50 {
            guess.calibrate(guess.text(&text), 1_000_000);
        }
        assert!(guess.text(&text) <= 3000);
    }

    #[test]
    fn context_sizes_by_family() {
        assert_eq!(default_context("gpt-4o"), 128_000);
        assert_eq!(default_context("claude-sonnet-4-5"), 200_000);
        assert_eq!(
            default_context("openrouter/anthropic/claude-sonnet-4.5"),
            200_000
        );
        assert_eq!(default_context("mistral-small"), 128_000);
    }
}
