"""What decides whether a call may run and what it may touch: approval, allowlist, rate limits, audit, the environment commands see, guarded entries."""
