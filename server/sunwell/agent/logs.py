"""The filter every log handler of a front end gets, so no log line shows a credential (tools/policy/audit.py
`MaskedLogRecords`: an HTTP client logs each request's URL, which may carry a learned API's query key). On its own,
and light: `sunwell serve` sets it before the sidecar answers `initialize`."""

from __future__ import annotations

from sunwell.tools.policy.audit import MaskedLogRecords

__all__ = ["MaskedLogRecords"]
