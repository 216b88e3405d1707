"""An MCP server that writes its answers' members in another order than the Python SDK: `result` first and `id`
last, as the TypeScript SDK does (`where: end`), or `id` between `result` and `jsonrpc` (`where: middle`), as no SDK
does, so that neither end of a long answer says which request it answers. Written by hand: an SDK server cannot be
told how to order its JSON."""

import json
import sys

TOOLS = [{"name": "big", "inputSchema": {"type": "object", "properties": {
    "megabytes": {"type": "integer"}, "where": {"enum": ["end", "middle"]}}}},
    {"name": "small", "inputSchema": {"type": "object"}}]


def answer(ident, result, where="end"):
    members = {"result": result, "jsonrpc": "2.0", "id": ident} if where == "end" else \
        {"result": result, "id": ident, "jsonrpc": "2.0"}
    sys.stdout.write(json.dumps(members, separators=(",", ":")) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "initialize":
        answer(ident, {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                       "serverInfo": {"name": "reordered", "version": "1"}})
    elif method == "tools/list":
        answer(ident, {"tools": TOOLS})
    elif method == "tools/call" and params["name"] == "big":
        arguments = params.get("arguments") or {}
        text = "0123456789abcdef" * (arguments.get("megabytes", 10) * 1024 * 1024 // 16)
        answer(ident, {"content": [{"type": "text", "text": text}]}, arguments.get("where", "end"))
    elif method == "tools/call":
        answer(ident, {"content": [{"type": "text", "text": "small and fine"}]})
    elif ident is not None:
        answer(ident, {})
