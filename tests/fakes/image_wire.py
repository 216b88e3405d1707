"""The image shapes each API takes, checked as the services check them: OpenAI's `image_url` content parts (only in
a `user` message; a `data:` URL of an image type, bytes that are that image; `detail` low, high or auto) and
Anthropic's `image` blocks (a base64 source of one of four types, bytes that are that type, at most 5 MB), in a user
turn or inside a `tool_result`'s content. A request that breaks one is refused with the service's own words."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
ANTHROPIC_MAX_BYTES = 5 * 1024 * 1024
_DATA_URL = re.compile(r"data:(?P<type>[\w/+.-]+);base64,(?P<data>.*)", re.DOTALL)
_OPENAI_PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")


def sniffed(raw: bytes) -> str | None:
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


def _decoded(data: Any) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True) if isinstance(data, str) else None
    except (binascii.Error, ValueError):
        return None


def openai_content_error(i: int, msg: dict) -> str | None:
    """What OpenAI says of a message whose `content` is a list of parts; None when it takes it."""
    content, role = msg.get("content"), msg.get("role")
    if not isinstance(content, list):
        return None
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in _OPENAI_PART_TYPES:
            return (f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', "
                    f"and 'file'.")
        if kind == "text" and not isinstance(part.get("text"), str):
            return f"Missing required parameter: 'messages[{i}].content[{j}].text'."
        if kind != "image_url":
            continue
        if role != "user":
            return (f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this "
                    f"message with role '{role}' contains an image URL.")
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str):
            return f"Missing required parameter: 'messages[{i}].content[{j}].image_url.url'."
        if image.get("detail", "auto") not in ("low", "high", "auto"):
            return f"Invalid value: '{image['detail']}'. Supported values are: 'low', 'high', and 'auto'."
        if url.startswith(("http://", "https://")):
            continue
        found = _DATA_URL.fullmatch(url)
        if found is None or found["type"] not in MEDIA_TYPES:
            got = found["type"] if found else url[:30]
            return (f"Invalid image URL: 'messages[{i}].content[{j}].image_url.url'. Expected a base64-encoded data "
                    f"URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got "
                    f"unsupported MIME type '{got}'.")
        raw = _decoded(found["data"])
        if raw is None or sniffed(raw) is None:
            return "You uploaded an unsupported image. Please make sure your image is valid."
    return None


def anthropic_image_error(where: str, block: dict) -> str | None:
    """What Anthropic says of an `image` block at `where` (`messages.0.content.1`); None when it takes it."""
    source = block.get("source")
    if not isinstance(source, dict):
        return f"{where}.image.source: Field required"
    if source.get("type") != "base64":
        return None if source.get("type") in ("url", "file") else (
            f"{where}.image.source: Input tag '{source.get('type')}' found using 'type' does not match any of the "
            "expected tags: 'base64', 'url', 'file'")
    if source.get("media_type") not in MEDIA_TYPES:
        return (f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or "
                "'image/webp'")
    raw = _decoded(source.get("data"))
    if raw is None:
        return f"{where}.image.source.base64.data: Invalid base64 data"
    if len(raw) > ANTHROPIC_MAX_BYTES:
        return f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(raw)} bytes > {ANTHROPIC_MAX_BYTES} bytes"
    if (actual := sniffed(raw)) != source["media_type"]:
        return (f"{where}.image.source.base64.data: The image was specified using the {source['media_type']} media "
                f"type, but the image appears to be a {actual or 'unknown'} image")
    return None


def anthropic_blocks_error(i: int, role: str, blocks: list[dict]) -> str | None:
    """Every image of a message's blocks, and of its tool results' content, checked."""
    for j, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "image":
            if role != "user":
                return f"messages.{i}.content.{j}: Image content is only supported in user messages"
            if error := anthropic_image_error(f"messages.{i}.content.{j}", block):
                return error
        if kind == "tool_result" and isinstance(block.get("content"), list):
            for k, inner in enumerate(block["content"]):
                if isinstance(inner, dict) and inner.get("type") == "image" and (
                        error := anthropic_image_error(f"messages.{i}.content.{j}.tool_result.content.{k}", inner)):
                    return error
    return None
