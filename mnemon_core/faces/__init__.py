"""The faces: the `mnemon` command line (cli.py), the MCP server (mcp.py), `mnemon viz` and `mnemon receipt`, and
the kit the framework integrations share (kit.py). Each calls `Memory`; none reaches into the pipelines or stores.

Empty on purpose: the resident engine's client imports `faces.cli` on every in-process call, so this package
loads nothing of its own.
"""
