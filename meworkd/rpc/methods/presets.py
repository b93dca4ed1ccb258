"""presets.*: named server selections with an approval level, for new conversations."""

from typing import Any

import msgspec
from mework_protocol.params import NameParams, NoParams, PresetParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import edits

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("presets.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    presets = s.store.settings.presets
    return {"presets": [{"name": n, **msgspec.to_builtins(p)} for n, p in presets.items()]}


@group.add("presets.set", PresetParams)
async def set_(s: Services, _conn: Connection, p: PresetParams) -> dict[str, Any]:
    await s.store.mutate(lambda doc: edits.set_preset(doc, p.name, p.preset))
    return {"name": p.name, **msgspec.to_builtins(s.store.settings.presets[p.name])}


@group.add("presets.remove", NameParams)
async def remove(s: Services, _conn: Connection, p: NameParams) -> dict[str, Any]:
    await s.store.mutate(lambda doc: edits.remove_preset(doc, p.name))
    return {"removed": p.name}
