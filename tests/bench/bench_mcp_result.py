"""A large MCP result, read by the SDK's own stdio reader and by Sunwell's (tools/mcp/stdio_transport.py), side by side.

    python tests/bench/bench_mcp_result.py [--megabytes 3] [--runs 3] [--cut 50]

Each run is a fresh process that starts the toolbox server (tests/mcp_servers/toolbox.py, unsandboxed) through
Sunwell's MCP bridge and calls its `big` tool once; the only difference between the two readers is the transport the
bridge uses. `--megabytes` is the result's text (the server sends it twice, as content and structured content, so a
3 MB text is a ~6.3 MB message: under the 8 MiB cap, read whole by both). Then, Sunwell's reader alone on a `--cut`
MB result, which it cuts as the bytes arrive (the SDK's reader would take minutes: its cost grows with the square of
a line's length). Prints medians, the ratio, and each process's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def one(reader: str, megabytes: int) -> dict:
    sys.path.insert(0, str(TESTS))
    import sunwell.tools.mcp.server as bridge
    from mcp_support import toolbox
    from sunwell.config import McpServerConfig
    from sunwell.tools.base import Limits, ToolContext, Trust, TurnServices
    from sunwell.tools.executor import execute
    from sunwell.tools.mcp import McpHub, Surroundings
    from sunwell.tools.workspace.jail import Jail
    from sunwell.wire.messages import ToolCall

    if reader == "sdk":
        from mcp.client.stdio import stdio_client

        bridge.stdio_transport = lambda params, errlog: stdio_client(params, errlog=errlog)

    async def main() -> dict:
        tmp = Path(tempfile.mkdtemp())
        hub = McpHub(Surroundings(tmp, tmp / "data"))
        hub.configure({"box": McpServerConfig.model_validate(toolbox(sandbox="off", timeout=600))}, {})
        ctx = ToolContext(jail=Jail(tmp), limits=Limits(max_output_bytes=100_000), turn=TurnServices(notify=lambda *_: None))
        await hub.start(Trust.full, None, ctx.notify)
        big = dataclasses.replace(next(t for t in hub.tools() if t.name == "box__big"), timeout=3600)
        started = time.perf_counter()
        result = await execute(big, ToolCall(id="c", name="box__big", arguments={"megabytes": megabytes}), ctx)
        seconds = time.perf_counter() - started
        await hub.close()
        return {"seconds": seconds, "ok": result.ok, "error": result.error.message if result.error else None,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}

    return asyncio.run(main())


def run(reader: str, megabytes: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", reader, "--megabytes", str(megabytes)],
                         capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cut", type=int, default=50)
    parser.add_argument("--one", choices=("sdk", "sunwell"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.megabytes)))
        return
    found: dict[str, list[dict]] = {"sdk": [], "sunwell": []}
    for _ in range(args.runs):  # interleaved, so a noisy moment hits both
        for reader, rows in found.items():
            rows.append(run(reader, args.megabytes))
    times = {reader: statistics.median(r["seconds"] for r in rows) for reader, rows in found.items()}
    rss = {reader: max(r["rss_mb"] for r in rows) for reader, rows in found.items()}
    print(f"{args.megabytes} MB result, read whole (median of {args.runs}): SDK reader {times['sdk']:.2f} s, "
          f"Sunwell's {times['sunwell']:.2f} s: {times['sdk'] / times['sunwell']:.1f}x; peak RSS {rss['sdk']} MB vs "
          f"{rss['sunwell']} MB; all ok: {all(r['ok'] for rows in found.values() for r in rows)}")
    cut = run("sunwell", args.cut)
    print(f"{args.cut} MB result, Sunwell's reader: cut in {cut['seconds']:.2f} s, peak RSS {cut['rss_mb']} MB "
          f"({cut['error']})")


if __name__ == "__main__":
    main()
