//! OpenAI-compatible Chat Completions. (Stub: being written.)
