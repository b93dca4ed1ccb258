"""``${VAR}`` expansion of server entries: at connect time only, never written back."""

import re
from collections.abc import Callable, Mapping

import msgspec

from meworkd.base.errors import InvalidSettings
from meworkd.settings.model import OAuthConfig, Sandbox, ServerConfig

__all__ = ["VARIABLE", "UnsetVariable", "expand", "expand_server"]

VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class UnsetVariable(InvalidSettings):
    """A ``${VAR}`` without a default names a variable that is not set."""

    kind = "unset_variable"

    def __init__(self, variable: str, where: str, *, stdio: bool = True) -> None:
        # envFile feeds a stdio server's own environment only, never ${VAR} in a url or header.
        env_file = ", or the entry's envFile" if stdio else ""
        super().__init__(
            f"{where}: environment variable ${{{variable}}} is not set in meworkd's environment "
            f"(the daemon's, not your shell's). For the user service: systemctl --user "
            f"set-environment {variable}=... then restart meworkd, or an EnvironmentFile= "
            f"drop-in for meworkd.service{env_file}; ${{{variable}:-default}} gives a fallback"
        )
        self.variable = variable


def expand(
    value: str, environ: Mapping[str, str], where: str = "value", *, stdio: bool = True
) -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` (and Cline's ``${env:VAR}``) from ``environ``.

    ``stdio``: whether the value belongs to a stdio server (the message may suggest envFile).
    """

    def substitute(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        found = environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise UnsetVariable(name, where, stdio=stdio)
            return default
        return found

    return VARIABLE.sub(substitute, value)


def expand_server(name: str, config: ServerConfig, environ: Mapping[str, str]) -> ServerConfig:
    """A copy of ``config`` with every connection field expanded."""
    stdio = config.type == "stdio"

    def text(value: str, key: str) -> str:
        return expand(value, environ, f"{name}.{key}", stdio=stdio)

    def one(value: str | None, key: str) -> str | None:
        return None if value is None else text(value, key)

    return msgspec.structs.replace(
        config,
        command=one(config.command, "command"),
        args=tuple(text(a, "args") for a in config.args),
        env={k: text(v, f"env.{k}") for k, v in config.env.items()},
        env_file=one(config.env_file, "envFile"),
        cwd=one(config.cwd, "cwd"),
        url=one(config.url, "url"),
        headers={k: text(v, f"headers.{k}") for k, v in config.headers.items()},
        oauth=_expand_oauth(name, config.oauth, environ),
        sandbox=_expand_sandbox(config.sandbox, text),
    )


def _expand_sandbox(sandbox: Sandbox | None, text: Callable[[str, str], str]) -> Sandbox | None:
    if sandbox is None:
        return None
    fs = sandbox.filesystem
    return msgspec.structs.replace(
        sandbox,
        filesystem=msgspec.structs.replace(
            fs,
            read=tuple(text(p, f"sandbox.filesystem.read[{i}]") for i, p in enumerate(fs.read)),
            write=tuple(text(p, f"sandbox.filesystem.write[{i}]") for i, p in enumerate(fs.write)),
        ),
    )


def _expand_oauth(
    name: str, oauth: OAuthConfig | bool | None, environ: Mapping[str, str]
) -> OAuthConfig | bool | None:
    """``${VAR}`` is allowed in the secret fields of ``oauth`` and its token files only."""
    if not isinstance(oauth, OAuthConfig):
        return oauth

    def one(value: str | None, key: str) -> str | None:
        where = f"{name}.oauth.{key}"
        return None if value is None else expand(value, environ, where, stdio=False)

    return msgspec.structs.replace(
        oauth,
        client_secret=one(oauth.client_secret, "clientSecret"),
        private_key=one(oauth.private_key, "privateKey"),
        assertion=one(oauth.assertion, "assertion"),
        assertion_file=one(oauth.assertion_file, "assertionFile"),
        idp_client_secret=one(oauth.idp_client_secret, "idpClientSecret"),
        id_token=one(oauth.id_token, "idToken"),
        id_token_file=one(oauth.id_token_file, "idTokenFile"),
    )
