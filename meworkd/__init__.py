"""meworkd: the MCP host daemon of the Mework chat app."""

__version__ = "0.1.0"
