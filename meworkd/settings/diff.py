"""What changed between two snapshots, as the ``settings.reloaded`` event tells it."""

from dataclasses import dataclass

import msgspec

from meworkd.settings.model import Settings

__all__ = ["SettingsDiff", "diff_settings"]


@dataclass(frozen=True, slots=True)
class SettingsDiff:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    connection_changed: tuple[str, ...] = ()
    policy_changed: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.connection_changed
            or self.policy_changed
            or self.invalid
        )

    def as_event(self) -> dict[str, list[str]]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "connectionChanged": list(self.connection_changed),
            "policyChanged": list(self.policy_changed),
            "invalid": list(self.invalid),
        }


def diff_settings(old: Settings, new: Settings) -> SettingsDiff:
    added = tuple(n for n in new.servers if n not in old.servers)
    removed = tuple(n for n in old.servers if n not in new.servers)
    connection: list[str] = []
    policy: list[str] = []
    for name, config in new.servers.items():
        before = old.servers.get(name)
        # serverInfo is what Test connection recorded: neither connection nor policy.
        if (
            before is None
            or msgspec.structs.replace(before, server_info=config.server_info) == config
        ):
            continue
        if before.connection_key() != config.connection_key():
            connection.append(name)
        else:
            policy.append(name)
    invalid = tuple(n for n, e in new.server_errors.items() if old.server_errors.get(n) != e)
    return SettingsDiff(added, removed, tuple(connection), tuple(policy), invalid)
