"""An image made fit to send to a model: the one place Sunwell decodes one (Pillow), for every way one comes in (the
user's `--image`, `@shot.png` and pasted images, read_file, an MCP server's image, a learned API's or a web page's).

Its type is read from its bytes, never its name (a PNG called `.jpg` is a PNG, an executable called `.png` is
refused); an SVG is refused, not rasterized: it is text, a drawing program's to render, and rendering it here would
mean a renderer fed by a workspace file. The size is read from the header before anything is decoded, so a
decompression bomb (a few kilobytes that open to 200 megapixels) is refused without a byte of it decoded. Then the
pixels are decoded, turned upright (EXIF orientation), scaled to `max_side`, and written anew with nothing else: no
EXIF (GPS, camera, software), no ICC profile, no text chunks. A JPEG stays a JPEG, anything else becomes a PNG, and
either is made smaller until it fits `max_bytes`. What cannot be done is a `ToolFailure` of one line naming the image.

Pillow is imported when an image is first seen: a session without one never loads it.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from typing import TYPE_CHECKING

from sunwell.config.settings import ImageSettings
from sunwell.tools.failure import ToolFailure
from sunwell.wire.results import ImagePart

if TYPE_CHECKING:
    from PIL.Image import Image

MAX_INPUT_BYTES = 50_000_000
"""A larger file is not opened at all."""
MAX_PIXELS = 50_000_000
"""A larger image is refused before it is decoded (a decompression bomb decodes to gigabytes)."""
SMALLEST_SIDE = 64
"""Shrinking to fit `max_bytes` stops here: an image that needs less is refused."""
JPEG_QUALITY = 85

_MAGIC = (  # (offset, bytes, media type, Pillow's format name)
    (0, b"\x89PNG\r\n\x1a\n", "image/png", "PNG"),
    (0, b"\xff\xd8\xff", "image/jpeg", "JPEG"),
    (0, b"GIF87a", "image/gif", "GIF"),
    (0, b"GIF89a", "image/gif", "GIF"),
    (8, b"WEBP", "image/webp", "WEBP"),  # after "RIFF" and a length
)
_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}


def sniff(head: bytes) -> str | None:
    """The media type the bytes say (`image/png`, `image/jpeg`, `image/gif`, `image/webp`), None for any other."""
    for offset, magic, media_type, _ in _MAGIC:
        if head[offset:offset + len(magic)] == magic and (offset == 0 or head.startswith(b"RIFF")):
            return media_type
    return None


def is_svg(head: bytes) -> bool:
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith(b"<svg") or (text.startswith((b"<?xml", b"<!doctype svg", b"<!--")) and b"<svg" in text)


def prepare(data: bytes, limits: ImageSettings, name: str = "the image") -> ImagePart:
    """`data` re-encoded within `limits`, without metadata; raises ToolFailure("unsupported") with one line."""
    media_type = sniff(data[:16])
    if media_type is None:
        if is_svg(data):
            raise _refused(f"{name} is an SVG drawing, which is text, not an image Sunwell sends: export it as PNG "
                           "to show it, or read it as text")
        raise _refused(f"{name} is not a PNG, JPEG, GIF or WebP image (by its bytes)")
    if len(data) > MAX_INPUT_BYTES:
        raise _refused(f"{name} is {len(data):,} bytes: too large an image to open (at most {MAX_INPUT_BYTES:,})")
    if media_type == "image/png":
        data = _without_broken_extras(data)
    image = _decoded(data, media_type, limits.max_side, name)
    encoded, sent_type, (width, height) = _encoded(image, media_type, limits, name)
    return ImagePart(media_type=sent_type, data=base64.b64encode(encoded).decode("ascii"), width=width,
                     height=height)


def describe(part: ImagePart, name: str) -> str:
    """One line naming an image part: `shot.png: a PNG image, 40×30 pixels`."""
    return f"{name}: a {_NAMES.get(part.media_type, part.media_type)} image, {part.width}×{part.height} pixels"


def _decoded(data: bytes, media_type: str, max_side: int, name: str) -> Image:
    from PIL import Image, ImageOps

    kind = _NAMES[media_type]
    # Pillow's own guard raises at open, past 2 × 89 megapixels, with no size to tell; the check below comes at the
    # same point (the header read, nothing decoded), lower, and says what the image is.
    Image.MAX_IMAGE_PIXELS = None
    try:
        image = Image.open(io.BytesIO(data), formats=[_format(media_type)])
        width, height = image.size
        if width * height > MAX_PIXELS:
            raise _refused(f"{name} is {width}×{height} pixels ({width * height // 1_000_000} megapixels): too large "
                           f"an image to open (at most {MAX_PIXELS // 1_000_000} megapixels)")
        if media_type == "image/jpeg":
            image.draft("RGB", (max_side, max_side))  # a large JPEG decodes at a fraction of its size: far cheaper
        image.seek(0)  # an animation's first frame
        image.load()
        image = ImageOps.exif_transpose(image)  # upright before its EXIF goes
    except ToolFailure:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, EOFError):
        raise _refused(f"{name} is a damaged or cut-short {kind} image: it cannot be read") from None
    if max(image.size) > max_side:
        image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    return image


def _without_broken_extras(png: bytes) -> bytes:
    """`png` without its ancillary chunks whose checksum is wrong (the MCP reference server's logo has a broken
    iCCP): browsers skip such a chunk and show the image, Pillow refuses the whole file. Nothing of them would be
    sent anyway (metadata is dropped); a broken critical chunk (IHDR, PLTE, IDAT, IEND) stays, and is refused."""
    kept, at = [png[:8]], 8
    while at + 12 <= len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        end = at + 12 + length
        if end > len(png):
            return png  # cut short: Pillow says so
        kind, body = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        ancillary = bool(kind[0] & 0x20)
        if not ancillary or zlib.crc32(kind + body) == struct.unpack(">I", png[end - 4:end])[0]:
            kept.append(png[at:end])
        at = end
    return b"".join(kept) + png[at:]


def _encoded(image: Image, media_type: str, limits: ImageSettings, name: str
             ) -> tuple[bytes, str, tuple[int, int]]:
    """The image written anew (only pixels: `info` emptied, no EXIF, ICC or text written), shrunk to fit."""
    from PIL import Image as PILImage

    photo = media_type == "image/jpeg"
    while True:
        out = _write(image, photo)
        if len(out) <= limits.max_bytes:
            return out, "image/jpeg" if photo else "image/png", image.size
        if not photo:
            photo = True  # a PNG of a photograph is large: the same pixels as a JPEG first
            continue
        if min(image.size) * 3 // 4 < SMALLEST_SIDE:
            raise _refused(f"{name} does not fit in {limits.max_bytes:,} bytes even at {image.width}×{image.height}")
        image = image.resize((image.width * 3 // 4, image.height * 3 // 4), PILImage.Resampling.LANCZOS)


def _write(image: Image, photo: bool) -> bytes:
    from PIL import Image as PILImage

    out = io.BytesIO()
    if photo:
        if image.mode in ("RGBA", "LA", "P", "PA"):  # a JPEG has no transparency: over white
            rgba = image.convert("RGBA")
            image = PILImage.new("RGB", rgba.size, (255, 255, 255))
            image.paste(rgba, mask=rgba.getchannel("A"))
        clean = image.convert("RGB") if image.mode not in ("RGB", "L") else image.copy()
        clean.info = {}
        clean.save(out, "JPEG", quality=JPEG_QUALITY)
    else:
        clean = image.convert("RGBA" if _has_alpha(image) else "RGB") if image.mode not in ("RGB", "RGBA", "L") \
            else image.copy()
        clean.info = {}
        clean.save(out, "PNG")
    return out.getvalue()


def _has_alpha(image: Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)


def _format(media_type: str) -> str:
    return next(name for _, _, kind, name in _MAGIC if kind == media_type)


def _refused(message: str) -> ToolFailure:
    return ToolFailure("unsupported", message)

