"""Real server.json documents from the MCP registry's own docs and schema examples, for the
fixture registry (tests/registry_fixture.py).

Each is copied from github.com/modelcontextprotocol/registry at the commit named beside it;
where a test must run the server, only the package's identifier/version (or the remote's URL
variable default) is changed to the copy the test suite installs, and the comment says so.
"""

from typing import Any

__all__ = [
    "BRAVE_SEARCH",
    "DATABASE_MANAGER",
    "FILESYSTEM",
    "HYBRID",
    "KNAPCODE",
    "LOCAL_WEATHER",
    "REMOTE_WEATHER",
    "TEXT_EDITOR",
    "WEATHER_PYPI",
    "everything",
    "remote_weather_at",
    "text_editor_at",
    "time_server",
]

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json"
PUBLISHER = "io.modelcontextprotocol.registry/publisher-provided"

# docs/reference/server-json/generic-server-json.md@5c1f63af, "Basic Server with NPM Package".
BRAVE_SEARCH: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.modelcontextprotocol.anonymous/brave-search",
    "description": "MCP server for Brave Search API integration",
    "title": "Brave Search",
    "websiteUrl": "https://anonymous.modelcontextprotocol.io/examples",
    "repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github"},
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@modelcontextprotocol/server-brave-search",
            "version": "1.0.2",
            "transport": {"type": "stdio"},
            "environmentVariables": [
                {
                    "name": "BRAVE_API_KEY",
                    "description": "Brave Search API Key",
                    "isRequired": True,
                    "isSecret": True,
                }
            ],
        }
    ],
    "_meta": {PUBLISHER: {"tool": "npm-publisher", "version": "1.0.1"}},
}

# generic-server-json.md@5c1f63af, "Filesystem Server with Multiple Packages".
FILESYSTEM: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.github.modelcontextprotocol/filesystem",
    "description": "Node.js server implementing Model Context Protocol (MCP) for filesystem "
    "operations.",
    "title": "Filesystem",
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@modelcontextprotocol/server-filesystem",
            "version": "1.0.2",
            "transport": {"type": "stdio"},
            "packageArguments": [
                {
                    "type": "positional",
                    "valueHint": "target_dir",
                    "description": "Path to access",
                    "default": "/Users/username/Desktop",
                    "isRequired": True,
                    "isRepeated": True,
                }
            ],
            "environmentVariables": [
                {
                    "name": "LOG_LEVEL",
                    "description": "Logging level (debug, info, warn, error)",
                    "default": "info",
                }
            ],
        },
        {
            "registryType": "oci",
            "identifier": "docker.io/mcp/filesystem:1.0.2",
            "transport": {"type": "stdio"},
            "runtimeArguments": [
                {
                    "type": "named",
                    "description": "Mount a volume into the container",
                    "name": "--mount",
                    "value": "type=bind,src={source_path},dst={target_path}",
                    "isRequired": True,
                    "isRepeated": True,
                    "variables": {
                        "source_path": {
                            "description": "Source path on host",
                            "format": "filepath",
                            "isRequired": True,
                        },
                        "target_path": {
                            "description": "Path to mount in the container. It should be "
                            "rooted in `/project` directory.",
                            "isRequired": True,
                            "default": "/project",
                        },
                    },
                }
            ],
            "packageArguments": [
                {"type": "positional", "valueHint": "target_dir", "value": "/project"}
            ],
            "environmentVariables": [
                {
                    "name": "LOG_LEVEL",
                    "description": "Logging level (debug, info, warn, error)",
                    "default": "info",
                }
            ],
        },
    ],
}

# generic-server-json.md@5c1f63af, "Python Package Example".
WEATHER_PYPI: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.github.example/weather-mcp",
    "description": "Python MCP server for weather data access",
    "title": "Weather",
    "version": "0.5.0",
    "packages": [
        {
            "registryType": "pypi",
            "registryBaseUrl": "https://pypi.org",
            "identifier": "weather-mcp-server",
            "version": "0.5.0",
            "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
            "environmentVariables": [
                {
                    "name": "WEATHER_API_KEY",
                    "description": "API key for weather service",
                    "isRequired": True,
                    "isSecret": True,
                },
                {
                    "name": "WEATHER_UNITS",
                    "description": "Temperature units (celsius, fahrenheit)",
                    "default": "celsius",
                },
            ],
        }
    ],
}

# generic-server-json.md@5c1f63af, "Constant (fixed) arguments needed to start the MCP server".
KNAPCODE: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.github.joelverhagen/knapcode-samplemcpserver",
    "description": "Sample NuGet MCP server for a random number and random weather",
    "version": "0.4.0-beta",
    "packages": [
        {
            "registryType": "nuget",
            "registryBaseUrl": "https://api.nuget.org",
            "identifier": "Knapcode.SampleMcpServer",
            "version": "0.4.0-beta",
            "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "positional", "value": "mcp"},
                {"type": "positional", "value": "start"},
            ],
        }
    ],
}

# generic-server-json.md@5c1f63af, "Complex Docker Server with Multiple Arguments".
DATABASE_MANAGER: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.github.example/database-manager",
    "description": "MCP server for database operations with support for multiple database types",
    "version": "3.1.0",
    "packages": [
        {
            "registryType": "oci",
            "identifier": "docker.io/example/database-manager-mcp:3.1.0",
            "transport": {"type": "stdio"},
            "runtimeArguments": [
                {"type": "named", "name": "--network", "value": "host"},
                {
                    "type": "named",
                    "name": "-e",
                    "value": "DB_TYPE={db_type}",
                    "isRepeated": True,
                    "variables": {
                        "db_type": {
                            "description": "Type of database",
                            "choices": ["postgres", "mysql", "mongodb", "redis"],
                            "isRequired": True,
                        }
                    },
                },
            ],
            "packageArguments": [
                {
                    "type": "named",
                    "name": "--host",
                    "description": "Database host",
                    "default": "localhost",
                    "isRequired": True,
                },
                {
                    "type": "named",
                    "name": "--port",
                    "description": "Database port",
                    "format": "number",
                },
                {
                    "type": "positional",
                    "valueHint": "database_name",
                    "description": "Name of the database to connect to",
                    "isRequired": True,
                },
            ],
            "environmentVariables": [
                {"name": "DB_USERNAME", "description": "Database username", "isRequired": True},
                {
                    "name": "DB_PASSWORD",
                    "description": "Database password",
                    "isRequired": True,
                    "isSecret": True,
                },
                {
                    "name": "SSL_MODE",
                    "description": "SSL connection mode",
                    "default": "prefer",
                    "choices": ["disable", "prefer", "require"],
                },
            ],
        }
    ],
}

# generic-server-json.md@5c1f63af, "Server with Remote and Package Options" (its second remote
# is the old SSE transport, which meworkd refuses).
HYBRID: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.modelcontextprotocol.anonymous/hybrid-mcp",
    "description": "MCP server available as both local package and remote service",
    "title": "Hybrid",
    "version": "1.5.0",
    "packages": [
        {
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@example/hybrid-mcp-server",
            "version": "1.5.0",
            "runtimeHint": "npx",
            "transport": {"type": "stdio"},
            "packageArguments": [
                {
                    "type": "named",
                    "name": "--mode",
                    "description": "Operation mode",
                    "default": "local",
                    "choices": ["local", "cached", "proxy"],
                }
            ],
        }
    ],
    "remotes": [
        {
            "type": "streamable-http",
            "url": "https://mcp.anonymous.modelcontextprotocol.io/http",
            "headers": [
                {
                    "name": "X-API-Key",
                    "description": "API key for authentication",
                    "isRequired": True,
                    "isSecret": True,
                },
                {
                    "name": "X-Region",
                    "description": "Service region",
                    "default": "us-east-1",
                    "choices": ["us-east-1", "eu-west-1", "ap-southeast-1"],
                },
            ],
        },
        {"type": "sse", "url": "https://mcp.anonymous.modelcontextprotocol.io/sse"},
    ],
}

# generic-server-json.md@5c1f63af, "MCP Bundle (MCPB) Package Example".
TEXT_EDITOR: dict[str, Any] = {
    "$schema": SCHEMA,
    "name": "io.modelcontextprotocol/text-editor",
    "description": "MCP Bundle server for advanced text editing capabilities",
    "title": "Text Editor",
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "mcpb",
            "identifier": "https://github.com/modelcontextprotocol/text-editor-mcpb/releases/"
            "download/v1.0.2/text-editor.mcpb",
            "fileSha256": "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce",
            "transport": {"type": "stdio"},
        }
    ],
}


def text_editor_at(url: str, sha256: str) -> dict[str, Any]:
    """TEXT_EDITOR with its bundle where a test serves one (``url``) and that file's digest."""
    package = {**TEXT_EDITOR["packages"][0], "identifier": url, "fileSha256": sha256}
    return {**TEXT_EDITOR, "packages": [package]}


# docs/reference/server-json/examples/valid/with-package.json@419f3c5d.
LOCAL_WEATHER: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.user/local-weather",
    "description": "Local MCP server distributed as an npm package.",
    "version": "1.0.0",
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@modelcontextprotocol/server-weather",
            "version": "1.0.0",
            "transport": {"type": "stdio"},
            "runtimeHint": "npx",
            "packageArguments": [
                {"type": "positional", "valueHint": "config_path"},
                {"type": "named", "name": "--port", "value": "8080"},
            ],
            "environmentVariables": [{"name": "API_KEY", "isSecret": True, "isRequired": True}],
        }
    ],
}

# docs/reference/server-json/examples/valid/with-remote.json@419f3c5d.
REMOTE_WEATHER: dict[str, Any] = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
    "name": "io.github.user/remote-weather",
    "description": "Remote MCP server reachable over streamable HTTP.",
    "version": "2.1.0",
    "title": "Remote Weather",
    "websiteUrl": "https://modelcontextprotocol.io/examples",
    "remotes": [
        {
            "type": "streamable-http",
            "url": "https://{host}/mcp",
            "headers": [{"name": "Authorization", "isSecret": True, "isRequired": True}],
            "variables": {"host": {"description": "API host", "default": "api.example.com"}},
        }
    ],
}


def remote_weather_at(base: str) -> dict[str, Any]:
    """REMOTE_WEATHER served by the local Streamable HTTP fixture: the URL's scheme is http
    and the ``host`` variable's default is the fixture's address (``base`` = http://h:p)."""
    host = base.removeprefix("http://")
    remote = {**REMOTE_WEATHER["remotes"][0], "url": "http://{host}/mcp"}
    remote["variables"] = {"host": {"description": "API host", "default": host}}
    return {**REMOTE_WEATHER, "remotes": [remote]}


def everything(version: str) -> dict[str, Any]:
    """generic-server-json.md@5c1f63af, "Server in a Monorepo with Subfolder", with the
    identifier and version of the server-everything the suite installs in .peers."""
    return {
        "$schema": SCHEMA,
        "name": "io.modelcontextprotocol/everything",
        "description": "MCP server that exercises all the features of the MCP protocol",
        "title": "Everything",
        "repository": {
            "url": "https://github.com/modelcontextprotocol/servers",
            "source": "github",
            "subfolder": "src/everything",
        },
        "version": version,
        "packages": [
            {
                "registryType": "npm",
                "registryBaseUrl": "https://registry.npmjs.org",
                "identifier": "@modelcontextprotocol/server-everything",
                "version": version,
                "transport": {"type": "stdio"},
            }
        ],
    }


def time_server(version: str) -> dict[str, Any]:
    """WEATHER_PYPI's shape (generic-server-json.md@5c1f63af, "Python Package Example") for
    mcp-server-time, the PyPI server the suite installs, at ``version``."""
    return {
        "$schema": SCHEMA,
        "name": "io.github.modelcontextprotocol/time",
        "description": "Time and timezone conversion capabilities",
        "title": "Time",
        "version": version,
        "packages": [
            {
                "registryType": "pypi",
                "registryBaseUrl": "https://pypi.org",
                "identifier": "mcp-server-time",
                "version": version,
                "runtimeHint": "uvx",
                "transport": {"type": "stdio"},
                "packageArguments": [
                    {
                        "type": "named",
                        "name": "--local-timezone",
                        "description": "The IANA timezone of the server",
                        "default": "UTC",
                    }
                ],
            }
        ],
    }
