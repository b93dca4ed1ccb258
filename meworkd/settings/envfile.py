"""An entry's ``envFile`` (VS Code's dotenv file), read each time its server is started.

Read at connect time, not at import, so an edited file takes effect on the next start and its
secrets never enter the settings document. Values under the entry's ``env`` win over the file's.
Its secret values are also read whenever the settings are applied, so the redactor knows them
(:func:`meworkd.settings.secrets.secret_values`).
"""

import os
import re
from pathlib import Path

__all__ = ["MAX_ENV_FILE_BYTES", "EnvFileUnreadable", "env_file_path", "read_env_file"]

MAX_ENV_FILE_BYTES = 1024 * 1024  # a dotenv file is small; a larger one is a wrong path
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")


class EnvFileUnreadable(Exception):
    """The ``envFile`` could not be read or is not a dotenv file; ``reason`` says how."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def env_file_path(env_file: str, cwd: str | None) -> Path:
    """``~`` expanded; a relative path is taken from the entry's ``cwd`` (else the home)."""
    path = Path(os.path.expanduser(env_file))
    if path.is_absolute():
        return path
    base = os.path.expanduser(cwd) if cwd else os.path.expanduser("~")
    return Path(base) / path


def read_env_file(env_file: str, cwd: str | None) -> dict[str, str]:
    """The variables of the dotenv file ``env_file`` names; raise :class:`EnvFileUnreadable`."""
    path = env_file_path(env_file, cwd)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_ENV_FILE_BYTES + 1)
    except FileNotFoundError:
        raise EnvFileUnreadable(str(path), "no such file") from None
    except IsADirectoryError:
        raise EnvFileUnreadable(str(path), "it is a directory") from None
    except PermissionError:
        raise EnvFileUnreadable(str(path), "permission denied") from None
    except OSError as exc:
        raise EnvFileUnreadable(str(path), exc.strerror or "not readable") from None
    if len(data) > MAX_ENV_FILE_BYTES:
        raise EnvFileUnreadable(str(path), f"larger than {MAX_ENV_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EnvFileUnreadable(str(path), "not UTF-8 text") from None
    return parse_dotenv(text, str(path))


def parse_dotenv(text: str, where: str) -> dict[str, str]:
    """``KEY=value`` lines; ``#`` comments, ``export``, and single or double quotes as dotenv."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise EnvFileUnreadable(where, f"line {number} is not KEY=value")
        key, value = match[1], match[2]
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"')
        else:
            value = value.split(" #", 1)[0].rstrip()  # an unquoted value's trailing comment
        found[key] = value
    return found
