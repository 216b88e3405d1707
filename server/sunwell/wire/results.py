"""What a tool gives back: the parts a model reads, in order, and the data a front end draws the result from.

The parts are pydantic-ai's idea (a tool returns text, data, images: ordered parts, each mapped to a vendor's shape
at the edge, models/providers/): text, JSON data, an image, a link to a resource. A provider that takes only text in
a tool result (OpenAI's `role: tool`, the emulation prompts) reads each part's `as_text()`; Anthropic's `tool_result`
takes text and image blocks.

`ResultData` is apart from the parts and never sent to a model (pydantic-ai's `metadata`, MCP's `structuredContent`
for a client): the page web_fetch read, the hits of web_search, a learned API's answer line, a sub-agent's answer.
A front end draws a card from it, never by parsing the text written for the model (STYLE.md 17).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, assert_never

from pydantic import Field

from sunwell.wire.base import TextPart, WireModel

__all__ = ["ApiAnswer", "DataPart", "ImagePart", "ResourceLinkPart", "ResultData", "ResultPart", "SearchHit",
           "SearchHits", "SubagentAnswer", "WebPage", "map_data", "map_text", "part_text"]


class DataPart(WireModel):
    """JSON data a model reads (an MCP server's structured content), rendered as indented JSON where only text goes."""

    kind: Literal["data"] = "data"
    data: Any
    """Any JSON value."""

    def as_text(self) -> str:
        return json.dumps(self.data, ensure_ascii=False, indent=2)


class ImagePart(WireModel):
    """An image: its media type and its bytes in base64."""

    kind: Literal["image"] = "image"
    media_type: str
    """Its MIME type (`image/png`, `image/jpeg`...)."""
    data: str
    """The image's bytes, in base64."""

    def as_text(self) -> str:
        """The note a model that takes no image in a tool result reads in its place."""
        size = len(self.data) * 3 // 4  # base64: not decoded just to be counted
        return f"[image: {self.media_type}, about {size:,} bytes — not shown, tool results are text]"


class ResourceLinkPart(WireModel):
    """A link to a resource the model may read another way (an MCP server's `resource_link`)."""

    kind: Literal["resource_link"] = "resource_link"
    uri: str
    """Where the resource is, as the server named it."""
    name: str | None = None
    """Its name, when the server gave one."""
    media_type: str | None = None
    """Its MIME type, when the server gave one."""

    def as_text(self) -> str:
        return f"[resource link: {self.uri}" + (f" ({self.name})" if self.name else "") + "]"


ResultPart = Annotated[TextPart | DataPart | ImagePart | ResourceLinkPart, Field(discriminator="kind")]


def part_text(part: ResultPart) -> str:
    """What a model that reads only text reads of `part` (the emulation prompts, `toolResult.output`)."""
    match part:
        case TextPart():
            return part.text
        case DataPart() | ImagePart() | ResourceLinkPart():
            return part.as_text()
        case _:
            assert_never(part)


def map_text(part: ResultPart, change: Callable[[str], str]) -> ResultPart:
    """`part` with `change` applied to the text it holds (its text, every string of its data, a link's URI and name),
    e.g. secrets masked; an image's bytes are not text."""
    match part:
        case TextPart():
            return TextPart(text=change(part.text))
        case DataPart():
            return DataPart(data=_map_strings(part.data, change))
        case ImagePart():
            return part
        case ResourceLinkPart():
            return part.model_copy(update={"uri": change(part.uri), "name": part.name and change(part.name)})
        case _:
            assert_never(part)


def map_data(data: ResultData, change: Callable[[str], str]) -> ResultData:
    """`data` with `change` applied to every string it holds."""
    return type(data).model_validate(_map_strings(data.model_dump(), change))


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {change(key): _map_strings(item, change) for key, item in value.items()}
    return value


# ---- data for the front ends -------------------------------------------------------------------------------------


class WebPage(WireModel):
    """The page web_fetch read: its final URL, that URL's host (IDNA-normalised, no port) and its title."""

    kind: Literal["webPage"] = "webPage"
    url: str
    """The URL the page was read from, after any redirects."""
    host: str
    """That URL's host, IDNA-normalised, without the port."""
    title: str | None = None
    """The page's title; null when it has none."""


class SearchHit(WireModel):
    """One result of a search."""

    title: str
    """The result's title, as the search service gave it."""
    url: str
    """The result's URL."""
    host: str
    """The URL's host, IDNA-normalised, without the port; "" when the URL is not http(s)."""
    snippet: str = ""
    """A few words of the page around what was searched for; "" when the service gave none."""


class SearchHits(WireModel):
    """What web_search found."""

    kind: Literal["webSearch"] = "webSearch"
    query: str
    """What was searched for."""
    hits: list[SearchHit]
    """The results, best first."""


class ApiAnswer(WireModel):
    """A learned API operation's answer: which call, to where (credentials masked), and what came back."""

    kind: Literal["apiAnswer"] = "apiAnswer"
    api: str
    """The learned API's name."""
    method: str
    """The HTTP method of the request."""
    url: str
    """The URL the request went to, credentials masked."""
    status: int
    """The HTTP status of the answer."""
    content_type: str
    """The answer's media type."""


class SubagentAnswer(WireModel):
    """What a `task` sub-agent was asked to do, and its final answer."""

    kind: Literal["subagent"] = "subagent"
    description: str
    """What the sub-agent was asked to do, in a few words."""
    answer: str
    """Its final answer, as markdown."""


ResultData = Annotated[WebPage | SearchHits | ApiAnswer | SubagentAnswer, Field(discriminator="kind")]
