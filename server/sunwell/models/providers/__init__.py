"""The provider adapters (OpenAI Chat Completions, Anthropic Messages) and the stack around them: retries, fallback, windowing."""
