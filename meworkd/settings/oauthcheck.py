"""What is wrong with a server entry's ``oauth`` object: each grant with what it needs.

Checked once when the settings are read (``parse_server``); the messages name the key, as
``s.oauth.clientId: required for the client_credentials grant``.
"""

import re

from meworkd.settings.model import MACHINE_GRANTS, OAUTH_GRANTS, TOKEN_AUTH_METHODS, OAuthConfig

__all__ = ["oauth_problems"]


def oauth_problems(name: str, kind: str, oauth: OAuthConfig | bool | None) -> list[str]:
    """What is wrong with an entry's ``oauth`` field (an object or ``false``)."""
    where = f"{name}.oauth"
    if oauth is None or oauth is False:
        return []
    if oauth is True:
        return [f"{where}: expected an object or false (true is the default: leave it out)"]
    assert isinstance(oauth, OAuthConfig)
    if kind == "stdio":
        return [f"{where}: only a streamable_http server logs in with OAuth"]
    problems: list[str] = []
    if oauth.grant not in OAUTH_GRANTS:
        problems.append(f"{where}.grant: expected one of {', '.join(OAUTH_GRANTS)}")
    method = oauth.token_endpoint_auth_method
    if method is not None and method not in TOKEN_AUTH_METHODS:
        problems.append(
            f"{where}.tokenEndpointAuthMethod: expected one of {', '.join(TOKEN_AUTH_METHODS)}"
        )
    port = oauth.redirect_port
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"{where}.redirectPort: expected a port number from 1 to 65535")
    url = oauth.client_metadata_url
    if url is not None and not re.match(r"^https://[^/]+/.", url):
        problems.append(f"{where}.clientMetadataUrl: expected an https:// URL with a path")
    if oauth.grant in MACHINE_GRANTS and not oauth.client_id:
        problems.append(f"{where}.clientId: required for the {oauth.grant} grant")
    if oauth.grant == "client_credentials" and not (oauth.client_secret or oauth.private_key):
        problems.append(f"{where}: the client_credentials grant needs clientSecret or privateKey")
    problems += _one_of(
        where, oauth.grant == "jwt_bearer", "assertion", oauth.assertion, oauth.assertion_file
    )
    if oauth.grant == "identity_assertion":
        problems += _one_of(where, True, "idToken", oauth.id_token, oauth.id_token_file)
        if not (oauth.idp_token_endpoint and re.match(r"^https?://", oauth.idp_token_endpoint)):
            problems.append(
                f"{where}.idpTokenEndpoint: the identity provider's token URL, required"
            )
        if not oauth.idp_client_id:
            problems.append(f"{where}.idpClientId: required for the identity_assertion grant")
    if oauth.client_secret and oauth.private_key:
        problems.append(f"{where}: give clientSecret or privateKey, not both")
    return problems


def _one_of(where: str, needed: bool, key: str, value: str | None, file: str | None) -> list[str]:
    """A token given inline or as a file: not both, and one when the grant needs it."""
    if value and file:
        return [f"{where}: give {key} or {key}File, not both"]
    if needed and not (value or file):
        return [f"{where}: this grant needs {key} or {key}File"]
    return []
