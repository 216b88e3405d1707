"""Images made safe to send (issue 45, item 4): re-encoded with Pillow, cut to the configured side and bytes, every
piece of metadata gone; bad input (a decompression bomb, a truncated PNG, an SVG, a file that lies about its type)
refused with one clear line. And read_file of an image, through the real jail."""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from sunwell.config.settings import ImageSettings
from sunwell.tools.base import Limits, ToolContext, ToolFailure
from sunwell.tools.executor import execute
from sunwell.tools.handlers.files import READ_FILE
from sunwell.tools.images import prepare
from sunwell.tools.workspace.jail import Jail
from sunwell.wire.messages import ToolCall
from sunwell.wire.results import ImagePart

LIMITS = ImageSettings()
GPS_IFD = 0x8825


def png(width: int = 40, height: int = 30, color: tuple = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def jpeg_with_gps() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = "CameraMaker"  # Make
    exif[0x0131] = "SecretSoftware 1.0"  # Software
    exif.get_ifd(GPS_IFD).update({1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)})
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 120, 200)).save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def bomb_png(width: int = 20_000, height: int = 10_000) -> bytes:
    """A valid 200-megapixel PNG header over a few bytes of zlib: decoding it would take gigabytes."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # grey, 8 bits
    rows = zlib.compress(b"\0" * (width + 1) * 16)  # a few rows; the rest is "missing", which is worse
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def decoded(part: ImagePart) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(part.data)))
    image.load()
    return image


def test_a_png_goes_through_as_a_png_with_its_size():
    part = prepare(png(), LIMITS)
    assert part.media_type == "image/png" and (part.width, part.height) == (40, 30)
    assert decoded(part).size == (40, 30)


def test_exif_gps_and_every_other_tag_are_gone_after_re_encoding():
    raw = jpeg_with_gps()
    assert Image.open(io.BytesIO(raw)).getexif().get_ifd(GPS_IFD)  # the attack is real: the input has GPS
    part = prepare(raw, LIMITS)
    image = decoded(part)
    assert part.media_type == "image/jpeg"
    assert dict(image.getexif()) == {} and not image.getexif().get_ifd(GPS_IFD)
    assert "exif" not in image.info and b"SecretSoftware" not in base64.b64decode(part.data)


def test_a_large_image_is_cut_to_the_longest_side_and_to_the_bytes():
    part = prepare(png(4000, 1000), LIMITS)
    assert (part.width, part.height) == (1568, 392) and decoded(part).size == (1568, 392)
    noisy = Image.effect_noise((1200, 1200), 120).convert("RGB")
    out = io.BytesIO()
    noisy.save(out, "PNG")
    assert len(out.getvalue()) > 2_000_000
    small = prepare(out.getvalue(), ImageSettings(max_bytes=200_000))
    assert len(base64.b64decode(small.data)) <= 200_000


def test_a_decompression_bomb_is_refused_before_it_is_decoded():
    with pytest.raises(ToolFailure) as refused:
        prepare(bomb_png(), LIMITS, "bomb.png")
    assert refused.value.error.message == ("bomb.png is 20000×10000 pixels (200 megapixels): too large an image to "
                                           "open (at most 50 megapixels)")


def test_a_truncated_png_is_refused_with_one_line():
    with pytest.raises(ToolFailure) as refused:
        prepare(png(300, 300)[:400], LIMITS, "cut.png")
    assert refused.value.error.message == "cut.png is a damaged or cut-short PNG image: it cannot be read"


def _with_chunk(data: bytes, kind: bytes, body: bytes, crc_ok: bool) -> bytes:
    """`data` (a PNG) with a chunk added after IHDR, its checksum right or wrong."""
    crc = zlib.crc32(kind + body) ^ (0 if crc_ok else 0xFFFF)
    chunk = struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc & 0xFFFFFFFF)
    return data[:33] + chunk + data[33:]


def test_a_broken_extra_chunk_is_skipped_as_a_browser_does_a_broken_pixel_chunk_is_not():
    """The MCP reference server's logo carries an iCCP chunk with a wrong checksum: browsers show it, so does
    Sunwell (the chunk is metadata, dropped anyway); a wrong checksum on the pixels is a damaged image."""
    broken_profile = _with_chunk(png(20, 20), b"iCCP", b"sRGB\x00\x00" + zlib.compress(b"x" * 100), crc_ok=False)
    part = prepare(broken_profile, LIMITS, "logo.png")
    assert (part.media_type, part.width, part.height) == ("image/png", 20, 20)
    good = png(20, 20)
    idat = good.index(b"IDAT")
    broken_pixels = good[:idat + 4] + bytes([good[idat + 4] ^ 0xFF]) + good[idat + 5:]
    with pytest.raises(ToolFailure, match="damaged or cut-short PNG"):
        prepare(broken_pixels, LIMITS, "bad.png")


def test_an_svg_is_refused_not_rasterized():
    svg = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
    with pytest.raises(ToolFailure) as refused:
        prepare(svg, LIMITS, "logo.svg")
    assert refused.value.error.message == ("logo.svg is an SVG drawing, which is text, not an image Sunwell sends: "
                                           "export it as PNG to show it, or read it as text")


def test_a_file_that_lies_about_its_type_is_read_by_its_bytes():
    part = prepare(png(), LIMITS, "photo.jpg")  # a PNG named .jpg: sent as what it is
    assert part.media_type == "image/png"
    with pytest.raises(ToolFailure) as refused:
        prepare(b"MZ\x90\x00 this is an executable, not a picture", LIMITS, "shot.png")
    assert refused.value.error.message == "shot.png is not a PNG, JPEG, GIF or WebP image (by its bytes)"


def test_an_animated_gif_sends_its_first_frame_and_webp_goes_through():
    frames = [Image.new("RGB", (20, 20), color) for color in ((255, 0, 0), (0, 255, 0))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:])
    part = prepare(out.getvalue(), LIMITS, "anim.gif")
    assert part.media_type == "image/png" and decoded(part).getpixel((0, 0))[:3] == (255, 0, 0)
    out = io.BytesIO()
    Image.new("RGBA", (20, 10), (0, 0, 255, 128)).save(out, "WEBP")
    assert prepare(out.getvalue(), LIMITS, "a.webp").media_type == "image/png"


# ---- read_file of an image -----------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "shot.png").write_bytes(png())
    (root / "secrets" / "badge.png").write_bytes(png())
    (root / "bomb.png").write_bytes(bomb_png())
    (tmp_path / "outside.png").write_bytes(png())
    return root


def run(root: Path, path: str):
    ctx = ToolContext(jail=Jail(root), limits=Limits(images=LIMITS))
    call = ToolCall(id="c1", name="read_file", arguments={"path": path})
    return asyncio.run(execute(READ_FILE, call, READ_FILE.bind(call.arguments), ctx))


def test_read_file_of_a_png_gives_the_image_as_a_part(ws: Path):
    result = run(ws, "shot.png")
    assert result.ok, result.error
    [caption, image] = result.parts
    assert caption.text == "shot.png: a PNG image, 40×30 pixels" and isinstance(image, ImagePart)
    assert (image.width, image.height) == (40, 30)


@pytest.mark.parametrize(("path", "code"), [("secrets/badge.png", "permission"), ("../outside.png", "permission"),
                                            ("bomb.png", "unsupported")])
def test_read_file_refuses_a_blocked_an_outside_and_a_bomb_image(ws: Path, path: str, code: str):
    result = run(ws, path)
    assert not result.ok and result.error.code == code and result.parts is None
