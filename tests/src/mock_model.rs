//! A scripted mock model server speaking the OpenAI and Anthropic wire formats. (Stub: being written.)
