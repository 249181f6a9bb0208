//! Scripted replies: what a test queues, with the quirks of real servers as builders.

use std::time::Duration;

use serde_json::Value;

use super::MockCall;

/// One scripted answer, rendered in whichever wire format the request used.
#[derive(Debug, Clone)]
pub struct Reply {
    pub(super) body: ReplyBody,
    pub(super) delay: Duration,
    pub(super) delta_delay: Duration,
    pub(super) cut_off: bool,
    pub(super) no_terminator: bool,
    pub(super) repeat_id_and_name: bool,
    pub(super) explicit_nulls: bool,
    pub(super) retry_after: Option<u64>,
    pub(super) non_streaming: bool,
    /// What usage the reply reports: `None` a plausible count (request bytes / 4), `Some(None)`
    /// no usage at all, `Some(Some((input, cached, output)))` exactly that.
    pub(super) usage: Option<Option<(u64, u64, u64)>>,
}

#[derive(Debug, Clone)]
pub(super) enum ReplyBody {
    Answer {
        text: String,
        calls: Vec<MockCall>,
    },
    Error {
        status: u16,
        message: String,
        json: bool,
    },
    StreamError {
        message: String,
    },
}

impl Reply {
    fn of(body: ReplyBody) -> Reply {
        Reply {
            body,
            delay: Duration::ZERO,
            delta_delay: Duration::ZERO,
            cut_off: false,
            no_terminator: false,
            repeat_id_and_name: false,
            explicit_nulls: false,
            retry_after: None,
            non_streaming: false,
            usage: None,
        }
    }

    /// Reports exactly this usage (input tokens with the cached ones included, cached, output).
    pub fn with_usage(mut self, input: u64, cached: u64, output: u64) -> Reply {
        self.usage = Some(Some((input, cached, output)));
        self
    }

    /// Reports no usage, as some local servers do.
    pub fn without_usage(mut self) -> Reply {
        self.usage = Some(None);
        self
    }

    /// A text reply, streamed as several deltas (one per word, or two halves of one word).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Answer {
            text: text.into(),
            calls: Vec::new(),
        })
    }

    /// One tool call; its arguments are streamed in several fragments.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, args: Value) -> Reply {
        Reply::tool_calls([MockCall::new(id, name, args)])
    }

    /// Several calls in one reply, e.g. `Reply::tool_calls([("c1", "ls", json!({}))])`.
    pub fn tool_calls<C: Into<MockCall>>(calls: impl IntoIterator<Item = C>) -> Reply {
        let calls = calls.into_iter().map(Into::into).collect();
        Reply::of(ReplyBody::Answer {
            text: String::new(),
            calls,
        })
    }

    /// A call whose arguments are sent verbatim (use it for arguments that are not JSON).
    pub fn raw_tool_call(id: impl Into<String>, name: impl Into<String>, raw: &str) -> Reply {
        let call = MockCall {
            id: id.into(),
            name: name.into(),
            arguments: raw.to_owned(),
        };
        Reply::tool_calls([call])
    }

    /// Neither text nor tool calls.
    pub fn empty() -> Reply {
        Reply::text("")
    }

    /// An error status with a plain-text body.
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Error {
            status,
            message: body.into(),
            json: false,
        })
    }

    /// An error status with the format's JSON error body (`{"error":{"message":..}}`).
    pub fn json_error(status: u16, message: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Error {
            status,
            message: message.into(),
            json: true,
        })
    }

    /// A 200 stream that fails mid-way with an error event (Anthropic `overloaded_error`;
    /// an OpenAI chunk `{"error":{..}}`).
    pub fn stream_error(message: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::StreamError {
            message: message.into(),
        })
    }

    /// Adds text before the tool calls.
    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        if let ReplyBody::Answer { text: existing, .. } = &mut self.body {
            *existing = text.into();
        }
        self
    }

    /// Waits this long before answering at all.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Waits this long between stream events.
    pub fn delta_delay(mut self, delay: Duration) -> Reply {
        self.delta_delay = delay;
        self
    }

    /// Sends the first half of the stream, then breaks the connection (no terminator, no
    /// end of the chunked body): the client sees a body error.
    pub fn cut_off(mut self) -> Reply {
        self.cut_off = true;
        self
    }

    /// Ends the stream cleanly but without `data: [DONE]` (OpenAI) or `message_stop`
    /// (Anthropic).
    pub fn no_terminator(mut self) -> Reply {
        self.no_terminator = true;
        self
    }

    /// OpenAI quirk: every tool-call chunk repeats the call's id, type and name.
    pub fn repeat_id_and_name(mut self) -> Reply {
        self.repeat_id_and_name = true;
        self
    }

    /// OpenAI: every absent field is sent as `null`, plus a chunk with no `delta`.
    pub fn explicit_nulls(mut self) -> Reply {
        self.explicit_nulls = true;
        self
    }

    /// Adds `Retry-After: secs` (for 429 and 5xx replies).
    pub fn retry_after(mut self, secs: u64) -> Reply {
        self.retry_after = Some(secs);
        self
    }

    /// Answers one JSON document (`application/json`) even to a stream request.
    pub fn non_streaming(mut self) -> Reply {
        self.non_streaming = true;
        self
    }
}
