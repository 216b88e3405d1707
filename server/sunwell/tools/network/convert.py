"""A fetched body as text the model reads: HTML as markdown, JSON pretty-printed, text as it is, binary refused.

HTML goes through markdownify on BeautifulSoup (both MIT): scripts, styles, forms' hidden parts and embedded
objects are dropped first, so a page's JavaScript never reaches the model as text. Compared on real pages
(BENCHMARKS.md "web_fetch"): html2text is faster but GPL-3.0; trafilatura keeps only what it takes for the main
content and dropped the signatures of an API reference page. The charset is the one the response names, else the
one the page declares, else the one charset-normalizer detects; bytes it cannot decode are replaced, never fatal. The three libraries are imported
when a page first needs them: every turn offers web_fetch, few fetch a page, and the sidecar's start should not pay.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sunwell.tools.failure import ToolFailure

Format = str  # "markdown" | "text" | "raw"
_BINARY_TYPES = re.compile(r"^(image|audio|video|font)/|^application/(pdf|zip|gzip|x-tar|octet-stream|x-7z|vnd\.|msword"
                           r"|x-executable|wasm)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)""", re.IGNORECASE)
_DROPPED_TAGS = ["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head"]


@dataclass(frozen=True)
class Page:
    """A fetched page as text: where it ended up, what it is called, and its content converted."""

    url: str
    title: str
    content_type: str
    text: str


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def declared_charset(content_type: str) -> str | None:
    match = re.search(r"charset\s*=\s*\"?([A-Za-z0-9_:.-]+)", content_type, re.IGNORECASE)
    return match.group(1) if match else None


def is_binary(content_type: str, body: bytes) -> bool:
    """A type no text comes from, or bytes that are not text whatever the server says (NULs, a PDF's magic)."""
    head = body[:8192]
    return bool(_BINARY_TYPES.search(media_type(content_type))) or head.startswith(b"%PDF-") or b"\x00" in head


def decode(body: bytes, content_type: str) -> str:
    """The body as text, in the charset the response names, the page declares or detection finds."""
    named = declared_charset(content_type)
    if named is None and "html" in media_type(content_type):
        match = _META_CHARSET.search(body[:4096])
        named = match.group(1).decode("ascii") if match else None
    if named:
        try:
            return body.decode(named, errors="replace")
        except LookupError:
            pass  # a charset Python does not know: detect it instead
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes  # only for a page that is neither labelled nor UTF-8

        best = from_bytes(body).best()
        return str(best) if best is not None else body.decode("utf-8", errors="replace")


def convert(url: str, content_type: str, body: bytes, form: Format) -> Page:
    """The page at `url` in the form the model asked for; raises ToolFailure for a body no text comes from."""
    if is_binary(content_type, body):
        raise ToolFailure("unsupported", f"{url} is {media_type(content_type) or 'binary data'}, not text: "
                          "web_fetch reads HTML, JSON and text only",
                          suggestion="find an HTML or text version of this content")
    text = decode(body, content_type)
    kind = media_type(content_type)
    looks_html = "html" in kind or (not kind and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")))
    if form == "raw":
        return Page(url, _title(text) if looks_html else "", content_type, text)
    if looks_html:
        return _html(url, content_type, text, form)
    if "json" in kind:
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass  # served as JSON but is not: shown as it is
    return Page(url, "", content_type, text)


def _html(url: str, content_type: str, text: str, form: Format) -> Page:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(text, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(_DROPPED_TAGS):
        tag.decompose()
    if form == "text":
        body = soup.get_text("\n")
    else:
        body = MarkdownConverter(heading_style="ATX", bullets="-", escape_underscores=False,
                                 escape_asterisks=False).convert_soup(soup)
    return Page(url, title, content_type, re.sub(r"\n{3,}", "\n\n", body).strip())


def _title(text: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title>", text[:65536], re.IGNORECASE | re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""
