"""web_fetch against the HTML-to-markdown library alone, on the same bytes; and its memory while a huge body is
refused.

    python tests/bench/bench_web_fetch.py [--megabytes 1] [--runs 5] [--huge-megabytes 1024]

2. A ~1 MB HTML page (a documentation page repeated: headings, paragraphs, code, lists, tables, links) is served by
   a local HTTP server. Side by side, alternating, in one process: the whole `web_fetch` tool (policy, fetch over
   HTTP, decode, convert, render) and the library alone (BeautifulSoup + markdownify on the same bytes, what
   convert.py calls). Prints the medians and their ratio (target <= 1.2x).
3. The same libraries' rivals on the same page, for the choice (html2text, trafilatura), when installed.
1. First, a body of `--huge-megabytes` sent as fast as the socket takes it, fetched with the default cap (5 MB): the
   refusal's time and this process's peak RSS growth (target: near the cap, not the body).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))

SECTION = """<h2 id="s{n}">Section {n}: Tasks and coroutines</h2>
<p>Coroutines declared with <code>async def</code> are the preferred way of writing asyncio applications. For
example, the following snippet prints <em>hello</em>, waits 1 second, and then prints <strong>world</strong>.</p>
<pre><code>async def main():
    print('hello')
    await asyncio.sleep(1)
    print('world')
</code></pre>
<ul><li><a href="/task/{n}">create_task()</a> schedules a coroutine</li><li>gather() runs awaitables</li>
<li>TaskGroup is the structured alternative</li></ul>
<table><tr><th>function</th><th>returns</th></tr><tr><td>sleep</td><td>None</td></tr>
<tr><td>wait_for</td><td>the result</td></tr></table>
"""


def page(megabytes: float) -> bytes:
    head = "<!doctype html><html><head><title>asyncio</title><script>var x = 1;</script></head><body><h1>asyncio</h1>"
    sections, size, n = [], len(head), 0
    while size < megabytes * 1_000_000:
        sections.append(SECTION.format(n=n))
        size += len(sections[-1])
        n += 1
    return (head + "".join(sections) + "</body></html>").encode()


def serve(body: bytes, huge: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/huge":
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()  # no length: read until the cap says stop
                chunk, sent = b"z" * 1_048_576, 0
                try:
                    while sent < huge:
                        self.wfile.write(chunk)
                        sent += len(chunk)
                except OSError:
                    pass
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, *args: object) -> None:
            pass

    server = Quiet(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def library(body: bytes) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(body.decode("utf-8"), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head"]):
        tag.decompose()
    return MarkdownConverter(heading_style="ATX", bullets="-", escape_underscores=False,
                             escape_asterisks=False).convert_soup(soup)


def rivals(body: bytes) -> dict[str, float]:
    found = {}
    text = body.decode("utf-8")
    try:
        import html2text

        converter = html2text.HTML2Text()
        converter.body_width = 0
        started = time.perf_counter()
        converter.handle(text)
        found["html2text"] = time.perf_counter() - started
    except ImportError:
        pass
    try:
        import trafilatura

        started = time.perf_counter()
        trafilatura.extract(text, output_format="markdown", include_links=True, include_tables=True)
        found["trafilatura"] = time.perf_counter() - started
    except ImportError:
        pass
    return found


async def tool(url: str, max_output: int) -> str:
    from sunwell.tools.base import Limits, ToolContext
    from sunwell.tools.handlers.web import web_fetch
    from sunwell.tools.network.hosts import HostRules
    from sunwell.tools.network.policy import Network
    from sunwell.tools.workspace.jail import Jail

    ctx = ToolContext(jail=Jail(Path.cwd()), network=Network(HostRules(["127.0.0.1"]), max_bytes=50_000_000), limits=Limits(max_output_bytes=max_output))
    return await web_fetch({"url": url}, ctx)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--huge-megabytes", type=int, default=1024)
    args = parser.parse_args()
    body = page(args.megabytes)
    server = serve(body, args.huge_megabytes * 1_048_576)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    import sunwell.tools.network.fetch  # noqa: F401 - imported before the peak is read: only the body counts

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    try:
        asyncio.run(_huge(url + "/huge"))
    except Exception as exc:  # noqa: BLE001 - the refusal is the point
        refusal = str(exc)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.huge_megabytes} MB body, cap 5 MB: refused in {time.perf_counter() - started:.2f} s "
          f"({refusal[:80]}); peak RSS {before:.0f} -> {after:.0f} MB (+{after - before:.0f} MB)")
    library(body), asyncio.run(tool(url + "/page", 10_000_000))  # warm both (imports, first parse)
    ours, alone = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        out = asyncio.run(tool(url + "/page", 10_000_000))
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        markdown = library(body)
        alone.append(time.perf_counter() - started)
    assert markdown.strip()[:200] in out, "the tool's text is not the library's"
    tool_ms, lib_ms = statistics.median(ours) * 1000, statistics.median(alone) * 1000
    print(f"page: {len(body) / 1e6:.2f} MB HTML -> {len(markdown) / 1e6:.2f} MB markdown, {args.runs} runs")
    print(f"web_fetch (HTTP + policy + convert): {tool_ms:.0f} ms; markdownify alone: {lib_ms:.0f} ms; "
          f"ratio {tool_ms / lib_ms:.2f}x")
    for name, seconds in rivals(body).items():
        print(f"  rival {name} alone: {seconds * 1000:.0f} ms")

    server.shutdown()


async def _huge(url: str) -> None:
    from sunwell.tools.network.fetch import fetch
    from sunwell.tools.network.hosts import HostRules
    from sunwell.tools.network.policy import Network
    from sunwell.tools.network.urls import parse_url

    await fetch(parse_url(url), Network(HostRules(["127.0.0.1"])))


if __name__ == "__main__":
    main()
