"""presets.*: named server selections with an approval level, for new conversations."""

from typing import Any

from mework_protocol.params import NameParams, NoParams, PresetParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("presets.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.settings.presets()


@group.add("presets.set", PresetParams)
async def set_(s: Services, _conn: Connection, p: PresetParams) -> dict[str, Any]:
    return await s.settings.set_preset(p.name, p.preset)


@group.add("presets.remove", NameParams)
async def remove(s: Services, _conn: Connection, p: NameParams) -> dict[str, Any]:
    return await s.settings.remove_preset(p.name)
