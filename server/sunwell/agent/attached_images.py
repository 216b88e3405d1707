"""The images a user sends with a line: given by the front end (`sunwell run --image FILE`, `sunwell/chat`'s
`images`: bytes, base64 or a workspace path) or mentioned (`@shot.png`: a file mention whose bytes are an image).

Each is made fit to send by tools/images.py (its type read from its bytes, re-encoded without metadata, within the
`images:` bounds); a workspace path is read through the jail, as a tool reads it (a blocked or outside path is
refused as the tools refuse it). What cannot be attached, and what is over `per_message`, is a line for the user
(an `image_refused` notice): the line itself goes on, with the rest.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from sunwell.agent.mentions import Mention
from sunwell.config.settings import ImageSettings
from sunwell.tools.base import ToolFailure
from sunwell.tools.images import MAX_INPUT_BYTES, is_svg, prepare, sniff
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.results import ImagePart


@dataclass(frozen=True)
class ImageInput:
    """An image a front end sends with a line: its bytes (`data`: bytes, or base64 text as the wire carries them)
    or a workspace-relative `path`, and what to call it in a message."""

    data: bytes | str | None = None
    path: str | None = None
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.path or "an attached image"


@dataclass(frozen=True)
class LineImages:
    images: list[ImagePart]
    mentions: list[Mention]
    """The mentions that were not images: attached as text (agent/mentions.py)."""
    refused: list[str]
    """One line each, for the user."""


def attach_images(given: Sequence[ImageInput], mentions: Sequence[Mention], jail: Jail,
                  limits: ImageSettings) -> LineImages:
    """The line's images: `given`, then the file mentions whose bytes are an image, within `limits`."""
    wanted = [*given, *(ImageInput(path=m.path, label=m.label) for m in mentions if _is_image_file(m, jail))]
    taken = {m.path for m in mentions if _is_image_file(m, jail)}
    rest = [m for m in mentions if not (m.kind == "file" and m.path in taken)]
    images, refused = [], []
    for item in wanted:
        if len(images) == limits.per_message:
            left = len(wanted) - len(images) - len(refused)
            refused.append(f"{left} more image{'s' if left > 1 else ''} left out: at most {limits.per_message} go "
                           "with one message (`images.per_message`)")
            break
        try:
            images.append(prepare(_bytes(item, jail), limits, item.name))
        except ToolFailure as failure:
            refused.append(f"not attached: {failure.error.message}")
    return LineImages(images, rest, refused)


def _bytes(item: ImageInput, jail: Jail) -> bytes:
    if isinstance(item.data, bytes):
        return item.data
    if isinstance(item.data, str):
        try:
            return base64.b64decode(item.data, validate=True)
        except (binascii.Error, ValueError):
            raise ToolFailure("unsupported", f"{item.name}: its data is not base64") from None
    real = jail.resolve(item.path or "")
    try:
        if real.stat().st_size > MAX_INPUT_BYTES:
            raise ToolFailure("unsupported", f"{item.name} is {real.stat().st_size:,} bytes: too large an image")
        return real.read_bytes()
    except OSError as exc:
        raise ToolFailure("not_found", f"{item.name}: {exc.strerror or exc}") from None


def _is_image_file(mention: Mention, jail: Jail) -> bool:
    """A mentioned workspace file whose first bytes are an image's (an SVG is text: attached as text)."""
    if mention.kind != "file" or not mention.path:
        return False
    try:
        with jail.resolve(mention.path).open("rb") as file:
            head = file.read(16)
    except (ToolFailure, OSError):
        return False  # agent/mentions.py says why, as it does for any file
    return sniff(head) is not None and not is_svg(head)
