"""What the model reads of an MCP `tools/call` result.

Text blocks are joined; structured content is shown as JSON unless the text already says the same (servers are told
to send both); images, audio and binary resources become one placeholder line each, since a tool result is text;
`isError` becomes an `execution` error whose message is the server's text. The output cap is the executor's, as for
every tool.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types

from sunwell.tools.base import ToolFailure

NO_OUTPUT = "(the tool returned no output)"


def render_result(result: types.CallToolResult) -> str:
    """The result as text, or a ToolFailure when the server says the call failed."""
    parts = [_block(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    structured = result.structured_content
    if structured is not None and not _says_the_same(text, structured):
        dumped = json.dumps(structured, ensure_ascii=False, indent=2)
        text = f"{text}\n[structured content]\n{dumped}" if text else dumped
    if result.is_error:
        raise ToolFailure("execution", text or "the tool reported an error and said nothing more",
                          "read the error; fix the arguments or try another way")
    return text or NO_OUTPUT


def _block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)} — not shown, tool results are text]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)} — not shown, tool results are text]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource {resource.uri}: {mime}, {_size(getattr(resource, 'blob', ''))} — not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content — not shown]"


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
