"""What meworkd decides: tool naming, turns, conversations, approvals; free of the SDK and RPC."""
