"""Sunwell: an agentic chat whose engine runs headless (the `sunwell` CLI) or as a VS Code sidecar."""

import os

__version__ = "0.1.0"

# Pydantic finds its plugins by reading the entry points of every installed package, ~35 ms at each start of the
# sidecar and the CLI (tests/bench/bench_sidecar.py). Sunwell uses none, and loads no third-party code that way.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
