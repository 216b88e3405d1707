"""Images a line carries over the wire (`sunwell/chat`'s `images`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from sunwell.wire.messages import WireModel
from sunwell.wire.options import Name, PathText

IMAGE_DATA_LIMIT = 70_000_000
"""The longest base64 `data` of an image a request may carry (50 MB of bytes, the most Sunwell opens)."""


class ImageAttachment(WireModel):
    """An image sent with a line (pasted or dropped in the editor): its bytes in base64 or a workspace file. Sunwell
    reads its type from its bytes, re-encodes it without metadata within the `images:` bounds, and attaches it to
    the line; one it cannot (not an image, an SVG, damaged, a blocked or outside path) is an `image_refused`
    notice, and the line goes on without it."""

    data: str | None = Field(None, max_length=IMAGE_DATA_LIMIT)
    """The image's bytes, base64 (standard alphabet, padded; no `data:` prefix)."""
    path: PathText | None = None
    """A workspace-relative file, read through the jail like any read (blocked files and folders refused)."""
    media_type: Name | None = None
    """Its MIME type as the client knows it (`image/png`); informative: the bytes decide."""

    @model_validator(mode="after")
    def _one_source(self) -> ImageAttachment:
        if (self.data is None) == (self.path is None):
            raise ValueError("give either `data` (base64) or `path` (a workspace file)")
        return self
