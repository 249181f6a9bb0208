//! Anthropic Messages. (Stub: being written.)
