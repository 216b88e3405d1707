"""The context budget: what a request costs in tokens, and the room it leaves in the model's window.

Counted before sending: the system prompt, the tools, the history and the output reserved for the answer (the
package's one estimate, models/tokens.py), scaled by what the responses' `usage` said of earlier requests (per
session, `SessionContext`).
When the next request would pass `compact_at` of the window (or not fit at all), old tool results are elided first
(`elisions`: the call stays, its output becomes one line), then the older part of the conversation is summarised
(agent/compaction.py); the newest results are cut to fit when they alone are too large (`fit_results`). Elisions and
compactions are rows of the session log, so a restored session rebuilds exactly the history it had
(`SessionStore.messages`), and the original messages stay in the log.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from sunwell.agent.log_lines import call_line
from sunwell.errors import SunwellError
from sunwell.models.fitting import Fitted
from sunwell.models.tokens import BYTES_PER_TOKEN, text_tokens, tools_tokens
from sunwell.tools.output import truncate
from sunwell.wire.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

ELIDED = ("[Sunwell] The output of {call} ({lines} lines, ~{tokens:,} tokens) was elided to keep the conversation "
          "within the context window; make the call again if you need it.")


def elided_output(call: str, lines: int, tokens: int) -> str:
    """What an old tool result becomes when elided: one line saying what it was and how to get it again."""
    return ELIDED.format(call=call, lines=lines, tokens=tokens)


MESSAGE_OVERHEAD = 4  # the chat template's role markers around each message
MIN_RESERVE = 256
ELIDE_MIN_TOKENS = 100  # a shorter result costs about what its elision line does
RESULT_SHARE = 0.5
"""The most of the window (after instructions and tools) the newest results may take together: a larger one is cut."""
TRUNCATION_HINT = "ask for less (offset/limit, a narrower path or pattern)"
PROJECT_MAX_TOKENS = 8000
"""AGENTS.md and .sunwell/instructions.md together take at most this, and at most a tenth of the window."""


class ContextFull(SunwellError):
    """The request cannot be made to fit the window; the message is the one line the user reads."""


@dataclass
class SessionContext:
    """What a session knows of its context (`LiveSession.context`): the estimate's calibration and the last figures
    (`::context` shows them)."""

    ratio: float = 1.0
    """Tokens the server counted per estimated token, from the responses' usage."""
    calibrated: bool = False
    window: int = 0
    source: str = ""
    used: int = 0
    """Tokens the conversation took after the last response (its input and output)."""
    estimated: bool = True
    """`used` is our estimate: the server reported no usage."""
    tools: Fitted | None = None
    """The tools as last fitted to the window: shown again while they hold (models/fitting.py `Fitted`)."""

    def observe(self, estimated: int, reported: int) -> bool:
        """Learn from a response's usage: `reported` input tokens for a request estimated at `estimated` (raw).
        False when the figure is not believable as a count of the whole request: under half the estimate, which
        tokenizers never are apart, but a server that counts only what its prompt cache did not hold is (Ollama)."""
        sample = reported / max(estimated, 1)
        if sample < 0.5:
            return False
        sample = min(max(sample, 0.7), 3.0)
        # The next request is mostly the last one again: its ratio is the best guess, the older ones smooth it.
        self.ratio = sample if not self.calibrated else 0.25 * self.ratio + 0.75 * sample
        self.calibrated = True
        return True


def cut_to_tokens(text: str, tokens: int, hint: str) -> str:
    """`text` cut (at a line, with the usual truncation notice) to about `tokens` raw tokens at most."""
    max_bytes = int(tokens * BYTES_PER_TOKEN)
    for _ in range(4):  # dense text (digits, symbols) holds fewer bytes a token: shrink until it fits
        out = truncate(text, max(max_bytes, 200), hint)
        size = text_tokens(out)
        if size <= tokens or max_bytes <= 200:
            return out
        max_bytes = int(max_bytes * tokens / size * 0.95)
    return out


def message_tokens(message: Message) -> int:
    """The raw (uncalibrated) estimate of one message as a provider is sent it."""
    match message:
        case SystemMessage():
            size = text_tokens(message.text)
        case UserMessage():
            size = text_tokens(message.content_for_model())
        case AssistantMessage():
            size = text_tokens(message.text) + text_tokens(message.thinking) + sum(
                text_tokens(call.name) + text_tokens(call.raw or json.dumps(call.arguments, ensure_ascii=False))
                for call in message.tool_calls)
        case ToolResultMessage():
            size = text_tokens(message.content_for_model())
    return size + MESSAGE_OVERHEAD


def request_tokens(system: str, tools: Sequence[ToolSpec], messages: Sequence[Message]) -> int:
    """The raw estimate of a request's input."""
    return (text_tokens(system) + MESSAGE_OVERHEAD + tools_tokens(tools) + sum(map(message_tokens, messages))
            + 3)  # the answer's opening


@dataclass
class Budget:
    """The window one session's requests are fitted to."""

    window: int
    max_tokens: int
    compact_at: float
    context: SessionContext

    @property
    def reserve(self) -> int:
        """Tokens kept for the answer (sent as `max_tokens`): a small window cannot give 4,096 to it."""
        return min(self.max_tokens, max(MIN_RESERVE, self.window // 8))

    @property
    def room(self) -> int:
        """The most a request's input may take."""
        return max(self.window - self.reserve, 0)

    @property
    def threshold(self) -> int:
        """Input above this makes room first: the request would pass `compact_at` of the window."""
        return min(int(self.window * self.compact_at) - self.reserve, self.room)

    def tokens(self, raw: int) -> int:
        """A raw estimate in the server's tokens, with a margin for what calibration cannot know yet."""
        return math.ceil(raw * self.context.ratio * (1.03 if self.context.calibrated else 1.1))

    def raw(self, tokens: int) -> int:
        """How many raw tokens fit in `tokens` of the server's."""
        return int(tokens / (self.context.ratio * (1.03 if self.context.calibrated else 1.1)))

    @property
    def summary_tokens(self) -> int:
        return min(2048, max(MIN_RESERVE, self.room // 6))


# ---- elision ---------------------------------------------------------------------------------------------------


def protected_from(history: Sequence[Message]) -> int:
    """Where the newest round begins (the last message that is not a tool result): the model has not answered what
    follows, so it is never elided nor summarised."""
    return next((i for i in range(len(history) - 1, -1, -1) if not isinstance(history[i], ToolResultMessage)), 0)


def elisions(history: Sequence[Message], need: int) -> tuple[dict[str, str], int]:
    """Outputs to elide, oldest first, until `need` raw tokens are saved: {call id: its one line}, and the saving."""
    calls = {call.id: call for m in history if isinstance(m, AssistantMessage) for call in m.tool_calls}
    outputs: dict[str, str] = {}
    saved = 0
    for message in history[: protected_from(history)]:
        if saved >= need:
            break
        if not isinstance(message, ToolResultMessage) or message.call_id in outputs:
            continue
        size = text_tokens(message.output)
        if size < ELIDE_MIN_TOKENS:
            continue
        call = calls.get(message.call_id) or ToolCall(id=message.call_id, name=message.name)
        line = elided_output(call_line(call), len(message.output.splitlines()), size)
        outputs[message.call_id] = line
        saved += size - text_tokens(line)
    return outputs, saved


def fit_results(results: list[ToolResultMessage], room: int, budget: Budget) -> list[ToolResultMessage]:
    """The newest results, the largest cut first (with the usual truncation hint) until together they fit `room`
    tokens (what is left of the window, but at least RESULT_SHARE of it)."""
    sizes = [budget.tokens(text_tokens(r.output)) for r in results]
    if sum(sizes) <= room:
        return results
    fitted, left = list(results), room
    for done, index in enumerate(sorted(range(len(results)), key=sizes.__getitem__)):
        allowed = left // (len(results) - done)  # small ones first: they keep all of theirs, the rest share
        if sizes[index] > allowed:
            fitted[index] = results[index].model_copy(update={  # cut to text: an image it held goes with the rest
                "output": cut_to_tokens(results[index].output, budget.raw(allowed), TRUNCATION_HINT), "parts": None})
            sizes[index] = allowed
        left -= sizes[index]
    return fitted


def largest_results(history: Sequence[Message], count: int = 3) -> list[tuple[str, int]]:
    """The `count` largest tool results of `history` as (call line, raw tokens), largest first (`::context`)."""
    calls = {call.id: call for m in history if isinstance(m, AssistantMessage) for call in m.tool_calls}
    sized = [(call_line(calls.get(m.call_id) or ToolCall(id=m.call_id, name=m.name)), message_tokens(m))
             for m in history if isinstance(m, ToolResultMessage)]
    return sorted(sized, key=lambda item: -item[1])[:count]
