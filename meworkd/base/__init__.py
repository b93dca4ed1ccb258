"""Mechanisms shared by every layer, with no knowledge of MCP or settings: errors, logs, events."""
