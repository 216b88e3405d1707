"""Tool calling for models without it: prompts, dialects, call detection and repair, constrained decoding."""
