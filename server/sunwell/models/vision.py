"""Images and a model that cannot see them: a line of text in place of each, and the user told, never a provider's
400 for an image it takes no image in.

A model without the `vision` capability (models/capabilities.py; `models: {"ollama:llava:7b": {vision: true}}` says
it of one the registry does not know) is sent each image of the conversation as the line `UNSEEN`: in a user's
message after its text, in a tool result where the image was. The user hears of it once, as a notice, in the turn the
images came in (a turn's later requests, and later turns, send the same history again without a word).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from sunwell.models.base import ModelRequest, Notice, Provider, StreamEvent
from sunwell.wire.base import TextPart
from sunwell.wire.messages import Message, ToolResultMessage, UserMessage
from sunwell.wire.results import ImagePart

UNSEEN = "an image was attached; this model cannot see images"
"""What a model that cannot see reads in place of each image."""


def without_images(messages: Sequence[Message]) -> list[Message]:
    """`messages` with each image replaced by the line `UNSEEN` (the others as they are, the same objects)."""
    return [_unseen(message) for message in messages]


def image_count(messages: Sequence[Message]) -> int:
    return sum(_images(message) for message in messages)


def _images(message: Message) -> int:
    if isinstance(message, UserMessage):
        return len(message.images)
    if isinstance(message, ToolResultMessage) and message.parts is not None:
        return sum(isinstance(part, ImagePart) for part in message.parts)
    return 0


def _unseen(message: Message) -> Message:
    if not _images(message):
        return message
    if isinstance(message, UserMessage):
        lines = "\n".join(UNSEEN for _ in message.images)
        return message.model_copy(update={"text": f"{message.text}\n\n{lines}", "images": []})
    assert isinstance(message, ToolResultMessage) and message.parts is not None
    parts = [TextPart(text=UNSEEN) if isinstance(part, ImagePart) else part for part in message.parts]
    return ToolResultMessage.of(message.call_id, message.name, parts, message.data).model_copy(
        update={"ok": message.ok, "error": message.error})


class SightlessProvider:
    """Wraps a turn's provider for a model without `vision`: each request goes out `without_images`, and the first
    request that holds images of this turn not told yet says so (`images_not_seen`)."""

    def __init__(self, inner: Provider, model: str) -> None:
        self.inner, self.model, self.name = inner, model, inner.name
        self._told = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        new = image_count(_this_turn(request.messages))
        if new > self._told:
            count = new - self._told
            self._told = new
            yield Notice("images_not_seen", f"{count} image{'s' if count > 1 else ''} not shown to {self.model}, "
                         f"which cannot see images; if it can, set `vision: true` for it under `models:`",
                         level="warning")
        async for event in self.inner.stream(replace(request, messages=without_images(request.messages))):
            yield event


def _this_turn(messages: Sequence[Message]) -> Sequence[Message]:
    """From the last user message on: what this turn added."""
    last = max((i for i, message in enumerate(messages) if isinstance(message, UserMessage)), default=0)
    return messages[last:]
