"""What RPC handlers may use: the core's façades the composition root built, as one value.

Handlers see this, never the daemon object: the daemon builds a :class:`Services` and the method
table from it, so no rpc module imports ``meworkd.app`` (the layers run app > rpc > core), and
the settings and MCP layers are reached only through the core.
"""

from dataclasses import dataclass

from meworkd.core.approvals.gate import Approvals
from meworkd.core.apps import Apps
from meworkd.core.asks import ServerAsks
from meworkd.core.conversations import Conversations
from meworkd.core.lifecycle import Lifecycle
from meworkd.core.registry import Registries
from meworkd.core.servers import Servers
from meworkd.core.settingsfile import SettingsFile
from meworkd.core.turns import Turns

__all__ = ["Services"]


@dataclass(frozen=True, slots=True)
class Services:
    daemon: Lifecycle  # daemon.*
    settings: SettingsFile  # settings.*, presets.*
    servers: Servers  # servers.*
    conversations: Conversations  # conversations.*, audit.list
    turns: Turns  # turns.*
    approvals: Approvals  # approvals.*
    asks: ServerAsks  # elicitations.*, sampling.*
    registries: Registries  # servers.search, .registryGet, .install, .outdated, .upgrade
    apps: Apps  # apps.* (MCP Apps views)
