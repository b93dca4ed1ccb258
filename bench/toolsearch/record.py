"""Record the tool search corpus: install real MCP servers from npm and PyPI, list their tools.

    .venv/bin/python bench/toolsearch/record.py            # install (if missing) and record all
    .venv/bin/python bench/toolsearch/record.py time git   # only these

Each server is installed at the version pinned below into bench/.work/toolservers (git-ignored:
npm packages into npm/, each PyPI one into a venv of its own), started over stdio with the mcp
SDK, asked for ``tools/list`` (every page) and stopped. Its tools are written, with the package
and version they came from, to bench/toolsearch/corpus/<id>.json. Servers that want a token get
a placeholder (``placeholder-not-a-secret``): listing tools sends no request with it.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
WORK = HERE.parent / ".work" / "toolservers"
NPM = WORK / "npm"
CORPUS = HERE / "corpus"
PLACEHOLDER = "placeholder-not-a-secret"
SCRATCH = Path(tempfile.gettempdir()) / "mework-toolsearch-record"

# id: (registry, package, version, bin, args, env)
SERVERS: dict[str, tuple[str, str, str, str, list[str], dict[str, str]]] = {
    "everything": ("npm", "@modelcontextprotocol/server-everything", "2026.8.31",
                   "mcp-server-everything", [], {}),
    "filesystem": ("npm", "@modelcontextprotocol/server-filesystem", "2026.8.31",
                   "mcp-server-filesystem", [str(SCRATCH)], {}),
    "memory": ("npm", "@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory",
               [], {"MEMORY_FILE_PATH": str(SCRATCH / "memory.json")}),
    "github": ("npm", "@modelcontextprotocol/server-github", "2025.4.8", "mcp-server-github",
               [], {"GITHUB_PERSONAL_ACCESS_TOKEN": PLACEHOLDER}),
    "gitlab": ("npm", "@modelcontextprotocol/server-gitlab", "2025.4.25", "mcp-server-gitlab",
               [], {"GITLAB_PERSONAL_ACCESS_TOKEN": PLACEHOLDER}),
    "slack": ("npm", "@modelcontextprotocol/server-slack", "2025.4.25", "mcp-server-slack", [],
              {"SLACK_BOT_TOKEN": PLACEHOLDER, "SLACK_TEAM_ID": "T0"}),
    "puppeteer": ("npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12",
                  "mcp-server-puppeteer", [], {}),
    "sequential-thinking": ("npm", "@modelcontextprotocol/server-sequential-thinking",
                            "2026.8.31", "mcp-server-sequential-thinking", [], {}),
    "google-maps": ("npm", "@modelcontextprotocol/server-google-maps", "0.6.2",
                    "mcp-server-google-maps", [], {"GOOGLE_MAPS_API_KEY": PLACEHOLDER}),
    "brave-search": ("npm", "@modelcontextprotocol/server-brave-search", "0.6.2",
                     "mcp-server-brave-search", [], {"BRAVE_API_KEY": PLACEHOLDER}),
    "playwright": ("npm", "@playwright/mcp", "0.0.86", "playwright-mcp", [], {}),
    "notion": ("npm", "@notionhq/notion-mcp-server", "2.5.2", "notion-mcp-server", [], {}),
    "desktop-commander": ("npm", "@wonderwhy-er/desktop-commander", "0.2.52",
                          "desktop-commander", [], {}),
    "ea-playwright": ("npm", "@executeautomation/playwright-mcp-server", "1.0.12",
                      "playwright-mcp-server", [], {}),
    "kubernetes": ("npm", "mcp-server-kubernetes", "4.1.7", "mcp-server-kubernetes", [], {}),
    "chrome-devtools": ("npm", "chrome-devtools-mcp", "1.11.0", "chrome-devtools-mcp", [], {}),
    "mongodb": ("npm", "mongodb-mcp-server", "3.0.4", "mongodb-mcp-server", [],
                {"MDB_MCP_TELEMETRY": "disabled"}),
    "airtable": ("npm", "airtable-mcp-server", "1.14.0", "airtable-mcp-server", [],
                 {"AIRTABLE_API_KEY": PLACEHOLDER}),
    "context7": ("npm", "@upstash/context7-mcp", "4.1.1", "context7-mcp", [], {}),
    "circleci": ("npm", "@circleci/mcp-server-circleci", "0.20.0", "mcp-server-circleci", [],
                 {"CIRCLECI_TOKEN": PLACEHOLDER}),
    "hubspot": ("npm", "@hubspot/mcp-server", "0.4.0", "mcp-hubspot", [],
                {"PRIVATE_APP_ACCESS_TOKEN": PLACEHOLDER}),
    "aws-kb-retrieval": ("npm", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2",
                         "mcp-server-aws-kb-retrieval", [],
                         {"AWS_ACCESS_KEY_ID": PLACEHOLDER, "AWS_SECRET_ACCESS_KEY": PLACEHOLDER,
                          "AWS_REGION": "us-east-1"}),
    "everart": ("npm", "@modelcontextprotocol/server-everart", "0.6.2", "mcp-server-everart",
                [], {"EVERART_API_KEY": PLACEHOLDER}),
    "postgres": ("npm", "@modelcontextprotocol/server-postgres", "0.6.2",
                 "mcp-server-postgres", ["postgresql://127.0.0.1:1/none"], {}),
    "sentry": ("npm", "@sentry/mcp-server", "0.39.0", "sentry-mcp", [],
               {"SENTRY_ACCESS_TOKEN": PLACEHOLDER}),
    "currents": ("npm", "@currents/mcp", "2.1.1", "mcp", [],
                 {"CURRENTS_API_KEY": PLACEHOLDER}),
    "time": ("pypi", "mcp-server-time", "2026.10.19", "mcp-server-time", [], {}),
    "fetch": ("pypi", "mcp-server-fetch", "2026.10.24", "mcp-server-fetch", [], {}),
    "git": ("pypi", "mcp-server-git", "2026.10.19", "mcp-server-git", [], {}),
    "sqlite": ("pypi", "mcp-server-sqlite", "2025.4.25", "mcp-server-sqlite",
               ["--db-path", str(SCRATCH / "bench.db")], {}),
    "excel": ("pypi", "excel-mcp-server", "2.2.2", "excel-mcp-server", ["stdio"], {}),
    "word": ("pypi", "office-word-mcp-server", "1.1.11", "word_mcp_server", [], {}),
    "powerpoint": ("pypi", "office-powerpoint-mcp-server", "2.0.7", "ppt_mcp_server", [], {}),
    "arxiv": ("pypi", "arxiv-mcp-server", "0.8.2", "arxiv-mcp-server",
              ["--storage-path", str(SCRATCH / "arxiv")], {}),
    "duckduckgo": ("pypi", "duckduckgo-mcp-server", "0.7.0", "duckduckgo-mcp-server", [], {}),
    "calculator": ("pypi", "mcp-server-calculator", "0.2.1", "mcp-server-calculator", [], {}),
    "atlassian": ("pypi", "mcp-atlassian", "0.23.1", "mcp-atlassian", [],
                  {"JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "someone",
                   "JIRA_API_TOKEN": PLACEHOLDER,
                   "CONFLUENCE_URL": "https://example.atlassian.net/wiki",
                   "CONFLUENCE_USERNAME": "someone", "CONFLUENCE_API_TOKEN": PLACEHOLDER}),
}  # fmt: skip


def install(ids: list[str]) -> None:
    """Install what is missing, at the pinned versions (npm without install scripts: no
    browser downloads)."""
    npm = [f"{SERVERS[i][1]}@{SERVERS[i][2]}" for i in ids if SERVERS[i][0] == "npm"]
    pypi = [f"{SERVERS[i][1]}=={SERVERS[i][2]}" for i in ids if SERVERS[i][0] == "pypi"]
    NPM.mkdir(parents=True, exist_ok=True)
    if npm:
        if not (NPM / "package.json").exists():
            (NPM / "package.json").write_text('{"private": true}\n')
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", *npm]
        subprocess.run(cmd, cwd=NPM, check=True)
    if pypi:
        for spec in pypi:  # a venv each: their pins of mcp differ
            venv = WORK / f"venv-{spec.split('==')[0]}"
            if not (venv / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", spec], check=False)


def command(server_id: str) -> StdioServerParameters:
    registry, package, _version, binary, args, env = SERVERS[server_id]
    where = NPM / "node_modules" / ".bin" if registry == "npm" else WORK / f"venv-{package}/bin"
    environment = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return StdioServerParameters(
        command=str(where / binary), args=args, env={**environment, **env}, cwd=str(SCRATCH)
    )


async def list_tools(server_id: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    async with (
        stdio_client(command(server_id)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        cursor = None
        while True:
            page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
            for tool in page.tools:
                tools.append(
                    {
                        "name": tool.name,
                        "title": tool.title,
                        "description": tool.description,
                        "inputSchema": tool.input_schema,
                    }
                )
            cursor = page.next_cursor
            if not cursor:
                return tools


async def record(server_id: str) -> None:
    registry, package, version, *_ = SERVERS[server_id]
    try:
        tools = await asyncio.wait_for(list_tools(server_id), 90)
    except Exception as exc:  # a server that will not start here is reported, not fatal
        print(f"{server_id:20} FAILED: {type(exc).__name__}: {exc}")
        return
    document = {
        "server": server_id,
        "source": f"{registry}:{package}@{version}",
        "recordedWith": "tools/list over stdio (bench/toolsearch/record.py)",
        "tools": tools,
    }
    path = CORPUS / f"{server_id}.json"
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"{server_id:20} {len(tools):4} tools  {registry}:{package}@{version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="servers to record (default: all)")
    parser.add_argument("--no-install", action="store_true")
    args = parser.parse_args()
    ids = args.ids or list(SERVERS)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    CORPUS.mkdir(exist_ok=True)
    if not args.no_install:
        install(ids)
    for server_id in ids:
        asyncio.run(record(server_id))


if __name__ == "__main__":
    main()
