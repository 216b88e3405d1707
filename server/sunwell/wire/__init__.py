"""The wire: what crosses between the engine and every front end, declared once (STYLE.md 3 and 13).

Canonical messages (with their attachment parts), the events of a turn, approval requests, usage, and the sidecar's
JSON-RPC payloads; their codes and names are words of sunwell/vocabulary.py. The extension's TypeScript types are
generated from these models (scripts/gen-protocol-types.py). Nothing here imports the engine, a provider or a tool.
"""
