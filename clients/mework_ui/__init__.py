"""mework_ui: Settings → MCP in the terminal, a Textual frontend over meworkd's socket."""

from mework_ui.launch import main

__all__ = ["main"]
