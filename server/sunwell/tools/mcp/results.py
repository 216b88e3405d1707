"""What the model reads of an MCP `tools/call` result, as the parts of a tool result (wire/results.py).

Text blocks are text parts; structured content is a JSON data part unless the text already says the same (servers
are told to send both); an image is an image part (a provider that takes no image in a tool result reads a note in
its place), a resource link a link part; audio and binary resources become one placeholder line each. `isError`
becomes an `execution` error whose message is the server's text. The output cap is the executor's, as for every
tool.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types

from sunwell.tools.base import ToolFailure, ToolReturn
from sunwell.wire.messages import TextPart
from sunwell.wire.results import DataPart, ImagePart, ResourceLinkPart, ResultPart, part_text

NO_OUTPUT = "(the tool returned no output)"


def render_result(result: types.CallToolResult) -> ToolReturn:
    """The result's parts, or a ToolFailure when the server says the call failed."""
    parts = [part for block in result.content if (part := _block(block)) is not None]
    text = "\n".join(shown for part in parts if (shown := part_text(part)))
    structured = result.structured_content
    if structured is not None and not _says_the_same(text, structured):
        parts += [TextPart(text="[structured content]")] if text else []
        parts.append(DataPart(data=structured))
    if result.is_error:
        said = "\n".join(shown for part in parts if (shown := part_text(part)))
        raise ToolFailure("execution", said or "the tool reported an error and said nothing more",
                          "read the error; fix the arguments or try another way")
    return ToolReturn(parts or [TextPart(text=NO_OUTPUT)])


def _block(block: Any) -> ResultPart | None:
    if isinstance(block, types.TextContent):
        return TextPart(text=block.text) if block.text else None
    if isinstance(block, types.ImageContent):
        return ImagePart(media_type=block.mime_type, data=block.data)
    if isinstance(block, types.AudioContent):
        return TextPart(text=f"[audio: {block.mime_type}, {_size(block.data)} — not shown, tool results are text]")
    if isinstance(block, types.ResourceLink):
        return ResourceLinkPart(uri=str(block.uri), name=block.name or None, media_type=block.mime_type)
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return TextPart(text=f"[resource {resource.uri}]\n{resource.text}")
        mime = getattr(resource, "mime_type", None) or "binary"
        return TextPart(text=f"[resource {resource.uri}: {mime}, {_size(getattr(resource, 'blob', ''))} — not shown]")
    return TextPart(text=f"[{getattr(block, 'type', 'unknown')} content — not shown]")


def _size(data: str | bytes) -> str:
    return f"about {len(data) * 3 // 4:,} bytes"  # base64: not decoded just to be counted


def _says_the_same(text: str, structured: dict[str, Any]) -> bool:
    """Whether `text` already carries `structured`: its JSON, or the text wrapped in an object of one key (FastMCP's
    `{"result": ...}`, the filesystem server's `{"content": ...}`)."""
    if not text:
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    wrapped = next(iter(structured.values())) if len(structured) == 1 else None
    return structured == parsed or (wrapped is not None and wrapped in (text, parsed))
