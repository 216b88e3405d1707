"""The images of a session's messages, each kept once by its hash in a file beside the session database
(`<data dir>/images/<sha256>.img`), not inline in every row that holds it.

A message is logged with each image's `data` emptied and its `sha256` set (`stored`); read back, the bytes come from
the file again (`restored`). An image whose file is gone (the data dir cleaned by hand) becomes a line saying so: the
conversation stays valid for every provider, and says what it lost.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sunwell.wire.base import TextPart
from sunwell.wire.messages import Message, ToolResultMessage, UserMessage
from sunwell.wire.results import ImagePart

GONE = "[an image was attached here; its file is no longer in Sunwell's data dir]"
M = TypeVar("M", bound=Message)


class ImageFiles:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def stored(self, message: M) -> M:
        """`message` as its row keeps it: each image's bytes written to its file (once), named by their hash."""
        return _with_images(message, self._store)

    def restored(self, message: M) -> M:
        """`message` as it was sent: each image's bytes read back from its file."""
        return _with_images(message, self._restore)

    def _store(self, image: ImagePart) -> ImagePart:
        if not image.data:
            return image
        raw = base64.b64decode(image.data)
        digest = hashlib.sha256(raw).hexdigest()
        path = self._path(digest)
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            part = path.with_suffix(f".{os.getpid()}.part")
            part.write_bytes(raw)
            os.replace(part, path)  # whole or not at all: a reader never sees half an image
        return image.model_copy(update={"data": "", "sha256": digest})

    def _restore(self, image: ImagePart) -> ImagePart | None:
        if image.data or image.sha256 is None:
            return image
        try:
            raw = self._path(image.sha256).read_bytes()
        except OSError:
            return None
        return image.model_copy(update={"data": base64.b64encode(raw).decode("ascii"), "sha256": None})

    def _path(self, digest: str) -> Path:
        return self.folder / f"{digest}.img"


def _with_images(message: M, change: Callable[[ImagePart], ImagePart | None]) -> M:
    if isinstance(message, UserMessage) and message.images:
        images = [change(image) for image in message.images]
        kept = [image for image in images if image is not None]
        text = message.text if len(kept) == len(images) else f"{message.text}\n\n{GONE}"
        return message.model_copy(update={"images": kept, "text": text})
    if isinstance(message, ToolResultMessage) and message.parts and any(
            isinstance(part, ImagePart) for part in message.parts):
        parts = [(change(part) or TextPart(text=GONE)) if isinstance(part, ImagePart) else part
                 for part in message.parts]
        return message.model_copy(update={"parts": parts})
    return message
