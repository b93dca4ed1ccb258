"""The MCP side: the only package that imports the SDK, httpx2 and pydantic."""
