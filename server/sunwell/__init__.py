"""Sunwell: an agentic chat whose engine runs headless (the `sunwell` CLI) or as a VS Code sidecar."""

__version__ = "0.1.0"
