"""A broken MCP server: it shakes hands and lists one tool correctly, then answers `tools/call` with a line that is
not JSON-RPC (what a server that prints its debug output to stdout does). Written by hand: the SDK's own servers
protect their stdout from exactly this."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "garbage", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        print("DEBUG: got a call, doing things now", flush=True)
        continue
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)
