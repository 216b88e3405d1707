"""Provider faults: what an HTTP status means to the user, how long to wait, and the retry loop of a stream.

429, 5xx and connection errors before the first streamed delta are retried with backoff that honours `retry-after`
(docs/events.md "Provider faults and the tool-turn limit"). After the first delta a retry would repeat what the user
already saw (and maybe a half-streamed tool call), so the fault ends the turn instead. The SDKs' own retries are off
(`max_retries=0`) because they cannot know what was already streamed and would wait without telling the user.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from email.utils import parsedate_to_datetime

from sunwell.models.base import ContextOverflow, ModelRequest, Provider, ProviderError, Retrying, StreamEvent

_MAX_DETAIL = 300


class StreamCut(ProviderError):
    """A stream that ended without a transport error but before its answer was complete (no finish reason, no
    closing event). `began`: any chunk came at all. llama-cpp-python ends a stream this way when the request is too
    long for it (before any chunk: models/providers/window.py `WindowedProvider` reads that) and when another client's request
    interrupts it (after some chunks)."""

    def __init__(self, message: str, *, began: bool) -> None:
        super().__init__(message, retryable=True)
        self.began = began


def one_line(text: str, limit: int = _MAX_DETAIL) -> str:
    """A provider's message squeezed onto one line (error pages from proxies can be whole HTML documents)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` (seconds or an HTTP date); None if absent."""
    if value := headers.get("retry-after-ms"):
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def fault_for_status(provider: str, status: int, detail: str, *, key_env: str,
                     headers: Mapping[str, str] | None = None) -> ProviderError:
    """The one-line `ProviderError` for an HTTP error status; `detail` is the provider's own message."""
    detail = one_line(detail) or "no details given"
    retry_after = parse_retry_after(headers or {})
    if status == 400:
        return ProviderError(f"{provider} rejected the request (400): {detail}", status=status)
    if status in (401, 403):
        return ProviderError(f"authentication failed for {provider}: check {key_env} ({status}: {detail})",
                             status=status)
    if status == 404:
        return ProviderError(f"model or endpoint not found: {detail}", status=status)
    if status == 429:
        return ProviderError(f"{provider} is rate limiting requests (429): {detail}", status=status,
                             retryable=True, retry_after=retry_after)
    if status == 529:
        return ProviderError(f"{provider} is overloaded (529): {detail}", status=status, retryable=True,
                             retry_after=retry_after)
    if status == 408 or status >= 500:
        return ProviderError(f"{provider} server error ({status}): {detail}", status=status, retryable=True,
                             retry_after=retry_after)
    return ProviderError(f"{provider} error ({status}): {detail}", status=status)


def backoff_delay(attempt: int, error: ProviderError, *, base_delay: float, max_delay: float) -> float:
    """The wait after failed try number `attempt` (1-based).

    The server's `retry-after` wins when it is reasonable; one longer than `max_delay` is not waited for (the
    turn would look hung), and exponential backoff is used instead, as the vendors' SDKs do.
    """
    if error.retry_after is not None and error.retry_after <= max_delay:
        return error.retry_after
    delay = base_delay * 2 ** (attempt - 1)
    return min(max_delay, delay * (1 + random.uniform(0, 0.25)))


async def stream_with_retries(
    provider: Provider,
    request: ModelRequest,
    *,
    attempts: int = 3,
    base_delay: float = 0.5,
    max_delay: float = 20,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> AsyncIterator[StreamEvent]:
    """`provider.stream(request)`, sent again on a retryable fault before anything was streamed.

    Each retry is announced by a `Retrying` event (its `attempt` is the number of the try about to start, so 2
    for the first retry) before the wait. `attempts` counts all tries. Any other fault propagates, and a
    `ContextOverflow` always does: the same request would be refused again (the caller shortens it).
    """
    for attempt in range(1, attempts + 1):
        streamed = False
        events = provider.stream(request)
        try:
            async for event in events:
                streamed = True
                yield event
            return
        except ProviderError as error:
            if streamed or not error.retryable or isinstance(error, ContextOverflow) or attempt == attempts:
                raise
            delay = backoff_delay(attempt, error, base_delay=base_delay, max_delay=max_delay)
            reason = str(error)
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        yield Retrying(attempt=attempt + 1, delay=delay, reason=reason)
        await sleep(delay)


class RetryingProvider:
    """`inner` with every request sent through `stream_with_retries`: the outermost layer of a turn's provider
    (models/factory.py `provider_for`), so the loop only streams."""

    def __init__(self, inner: Provider, *, attempts: int = 3) -> None:
        self.inner, self.attempts = inner, attempts
        self.name = inner.name

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return stream_with_retries(self.inner, request, attempts=self.attempts)
