"""The sidecar: a pygls language server that puts the engine and the lens language features on JSON-RPC."""
