"""What is a secret in a server entry, and nothing else: masked for display, listed to redact.

A secret is exactly:

* a ``headers`` value, except that of a descriptive header (:data:`DESCRIPTIVE_HEADERS`, e.g.
  ``Content-Type``, ``User-Agent``) written without ``${VAR}``;
* an ``env`` value whose name looks secret (:func:`is_secret_name`) or that holds a ``${VAR}``;
* whatever a ``${VAR}`` expands to inside ``url`` (userinfo, path segment, query value);
* the literal of a ``${VAR:-literal}`` default in any of those places.

Everything else (``LOG_LEVEL=info``, ``NODE_ENV=production``, ``Content-Type:
application/json``) is ordinary data and passes through replies, events and logs unchanged.
:func:`secret_values` lists the secrets for the redactor; :func:`masked_entry` masks them for
display; :func:`restore_masked` puts the stored secret back where a frontend sent its mask.
"""

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import msgspec

from meworkd.base.log import REDACTED
from meworkd.settings.envfile import EnvFileUnreadable, read_env_file
from meworkd.settings.expand import VARIABLE, UnsetVariable, expand
from meworkd.settings.model import OAuthConfig, ServerConfig

__all__ = [
    "DESCRIPTIVE_HEADERS",
    "MASK",
    "OAUTH_SECRET_FIELDS",
    "SECRET_WORDS",
    "carries_mask",
    "is_secret_name",
    "mask_value",
    "masked_entry",
    "restore_masked",
    "secret_values",
]

MASK = "********"
# The fields of an ``oauth`` object that hold secrets (the rest is shown as is).
OAUTH_SECRET_FIELDS = ("clientSecret", "privateKey", "assertion", "idToken", "idpClientSecret")
# Words that make an env name a secret's, as a whole word of it (plural too): GITHUB_PAT,
# apiKey, X_AUTH_TOKENS are secret; PATH, NODE_ENV, MONKEY, KEYBOARD_LAYOUT are not.
SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "KEY",
        "SECRET",
        "PASSWORD",
        "PASS",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
        "PAT",
        # Spellings of the same that people run together.
        "APIKEY",
        "PASSWD",
        "PASSPHRASE",
        "AUTHORIZATION",
    }
)
# Headers that describe the request rather than authenticate it (compared lower-case).
DESCRIPTIVE_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "content-language",
        "content-type",
        "mcp-protocol-version",
        "user-agent",
    }
)
# A name's words: runs split at non-alphanumerics, at lower-to-upper case changes, before the
# last capital of an acronym followed by lower case (APIKey -> API, Key) and at digits.
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+|[0-9]+")
_HARMLESS = re.compile(r"^\s*(?:(?:Bearer|Basic|Token)\s*)?$", re.IGNORECASE)
# "Bearer abc": the credential after an auth scheme is a secret on its own too.
_SCHEME = re.compile(r"^\s*(?:Bearer|Basic|Token)\s+(\S.*?)\s*$", re.IGNORECASE)
_MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words in logs


def is_secret_name(name: str) -> bool:
    """Whether an ``env`` name looks secret: one of its words is in :data:`SECRET_WORDS`."""
    for word in _WORD.findall(name):
        upper = word.upper()
        if upper in SECRET_WORDS or (upper.endswith("S") and upper[:-1] in SECRET_WORDS):
            return True
    return False


def _whole_is_secret(kind: str, name: str, value: str) -> bool:
    """Whether the whole value of ``kind`` (env, headers or url) ``name`` is a secret."""
    if kind == "url":
        return False  # only what ${VAR} puts into it
    if kind == "oauth":
        return True  # only its secret fields are listed (OAUTH_SECRET_FIELDS)
    if VARIABLE.search(value):
        return True
    if kind == "env":
        return is_secret_name(name)
    return name.lower() not in DESCRIPTIVE_HEADERS


def _is_reference_only(value: str) -> bool:
    """``${TOKEN}`` or ``Bearer ${TOKEN}``: shows where a secret comes from, not the secret."""
    return bool(VARIABLE.search(value)) and bool(_HARMLESS.match(VARIABLE.sub("", value)))


def _mask_defaults(value: str) -> str:
    return VARIABLE.sub(
        lambda m: m[0] if m[2] is None else m[0][: m.start(2) - m.start(0)] + MASK + "}", value
    )


def mask_value(kind: str, name: str, value: object) -> object:
    """``value`` as shown without ``reveal``: secrets masked, references and the rest as is."""
    if not isinstance(value, str):
        return MASK if kind != "url" else value
    if not _whole_is_secret(kind, name, value):
        return _mask_defaults(value)
    return _mask_defaults(value) if _is_reference_only(value) else MASK


def _fields(entry: Mapping[str, Any]) -> Iterator[tuple[str, str, object]]:
    """(kind, name, value) of every place of ``entry`` that may hold a secret."""
    for kind in ("env", "headers"):
        values = entry.get(kind)
        if isinstance(values, dict):
            for name, value in values.items():
                yield kind, name, value
    if "url" in entry:
        yield "url", "url", entry["url"]
    oauth = entry.get("oauth")
    if isinstance(oauth, dict):
        for name in OAUTH_SECRET_FIELDS:
            if name in oauth:
                yield "oauth", name, oauth[name]


def masked_entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a raw entry with its secrets masked (defaults of ``${VAR:-x}`` too)."""
    out = dict(raw)
    for kind in ("env", "headers"):
        if isinstance(raw.get(kind), dict):
            out[kind] = {k: mask_value(kind, k, v) for k, v in raw[kind].items()}
    if "url" in raw:
        out["url"] = mask_value("url", "url", raw["url"])
    if isinstance(raw.get("oauth"), dict):
        oauth = out["oauth"] = dict(raw["oauth"])
        for name in OAUTH_SECRET_FIELDS:
            if name in oauth:
                oauth[name] = mask_value("oauth", name, oauth[name])
    return out


def restore_masked(entry: Mapping[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """``entry`` with each value that is exactly the mask of the stored one set back to it.

    A frontend that shows ``servers.get`` and sends the entry back unchanged must not replace
    the stored secret with ``********``.
    """
    out = dict(entry)
    if not stored:
        return out
    for kind in ("env", "headers"):
        sent, kept = entry.get(kind), stored.get(kind)
        if isinstance(sent, dict) and isinstance(kept, dict):
            out[kind] = {
                k: kept[k] if k in kept and _is_mask_of(kind, k, v, kept[k]) else v
                for k, v in sent.items()
            }
    if "url" in entry and _is_mask_of("url", "url", entry["url"], stored.get("url")):
        out["url"] = stored["url"]
    sent_oauth, kept_oauth = entry.get("oauth"), stored.get("oauth")
    if isinstance(sent_oauth, dict) and isinstance(kept_oauth, dict):
        out["oauth"] = {
            k: kept_oauth[k]
            if k in OAUTH_SECRET_FIELDS and _is_mask_of("oauth", k, v, kept_oauth.get(k))
            else v
            for k, v in sent_oauth.items()
        }
    return out


def _is_mask_of(kind: str, name: str, sent: object, stored: object) -> bool:
    return isinstance(sent, str) and sent != stored and sent == mask_value(kind, name, stored)


def carries_mask(entry: Mapping[str, Any], stored: Mapping[str, Any] | None = None) -> str | None:
    """The first place of ``entry`` that a mask or a redaction would change, if any."""
    unchanged = {f for f in _fields(stored or {}) if isinstance(f[2], str)}
    for kind, name, value in _fields(entry):
        if not isinstance(value, str) or (kind, name, value) in unchanged:
            continue
        if MASK in value or REDACTED in value:
            return kind if kind == "url" else f"{kind}.{name}"
    return None


def _expansions(value: str, environ: Mapping[str, str]) -> Iterator[str]:
    """What each ``${VAR}`` of ``value`` expands to, and each default's literal."""
    for match in VARIABLE.finditer(value):
        name, default = match[1], match[2]
        found = environ.get(name)
        if default is not None:
            yield default
        if found:
            yield found


def _expanded(value: str, environ: Mapping[str, str]) -> str | None:
    try:
        return expand(value, environ)
    except UnsetVariable:
        return None


def _env_file_secrets(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """The secret values of the entry's ``envFile`` as it reads now (none if it cannot be read:
    the server then fails to start, saying why)."""
    if not config.env_file:
        return []
    try:
        cwd = expand(config.cwd, environ) if config.cwd else None
        values = read_env_file(expand(config.env_file, environ), cwd)
    except (UnsetVariable, EnvFileUnreadable):
        return []
    return [v for k, v in values.items() if k not in config.env and _whole_is_secret("env", k, v)]


def secret_values(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """Every secret of ``config`` (raw and expanded forms) for the redactor, longest first."""
    found: set[str] = set()
    places = [("env", k, v) for k, v in config.env.items()]
    places += [("headers", k, v) for k, v in config.headers.items()]
    if config.url is not None:
        places.append(("url", "url", config.url))
    if isinstance(config.oauth, OAuthConfig):
        oauth = config.oauth
        places += [
            ("oauth", field.encode_name, value)
            for field in msgspec.structs.fields(oauth)
            if field.encode_name in OAUTH_SECRET_FIELDS
            and (value := getattr(oauth, field.name)) is not None
        ]
    for kind, name, value in places:
        parts = set(_expansions(value, environ))
        if kind == "url":
            parts |= {quote(p, safe="") for p in parts} | {quote(p) for p in parts}
        elif _whole_is_secret(kind, name, value):
            forms = {value, _expanded(value, environ) or value}
            for form in forms:
                parts.add(form)
                # Only the scheme is split off: the words of other values are not secrets
                # each ("mework desktop" must not redact every "desktop").
                if credential := _SCHEME.match(form):
                    parts.add(credential[1])
        found |= parts
    found |= set(_env_file_secrets(config, environ))
    return sorted(
        (s for s in found if len(s) >= _MIN_SECRET_LENGTH and not _is_reference_only(s)),
        key=len,
        reverse=True,
    )
