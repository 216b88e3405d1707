"""The sidecar's start: `sunwell serve` (the extension runs `python -m sunwell serve`) collects no garbage until
its first engine is built, then freezes what the start made and collects again (lsp/process.py `end_of_start`;
bench_sidecar.py measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from conftest import SERVER

WATCH = textwrap.dedent("""
    import gc, runpy, sys, threading, time
    sys.argv = ["sunwell", "serve"]

    def watch():
        seen = None
        while True:
            now = (gc.isenabled(), gc.get_freeze_count() > 0)
            if now != seen:
                print("gc", *now, file=sys.stderr, flush=True)
                seen = now
            time.sleep(0.002)

    threading.Thread(target=watch, daemon=True).start()
    time.sleep(0.05)
    runpy.run_module("sunwell", run_name="__main__")
""")


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_collector_is_off_until_the_first_engine_then_on_with_the_start_frozen(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SERVER), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "SUNWELL_DATA_DIR": str(tmp_path / "data")}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                    "initializationOptions": {"model": "openai:gpt-4o", "dataDir": str(tmp_path / "data")}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "sunwell/models", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"},
    ]
    done = subprocess.run([sys.executable, "-c", WATCH], input=b"".join(map(frame, messages)), env=env,
                          capture_output=True, timeout=60, cwd=tmp_path, check=True)
    states = [line for line in done.stderr.decode().splitlines() if line.startswith("gc ")]
    assert b'"current":"openai:gpt-4o"' in done.stdout.replace(b" ", b"")  # it answered with the engine built
    assert states[0] == "gc True False"  # before the CLI took the serve path
    assert states[1:] == ["gc False False", "gc True True"]
