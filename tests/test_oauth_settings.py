"""The ``oauth`` field of an HTTP entry: accepted shapes, clear errors, and its secrets."""

import pytest

from meworkd.base.errors import InvalidSettings
from meworkd.settings import (
    OAuthConfig,
    expand_server,
    masked_entry,
    parse_server,
    restore_masked,
    secret_values,
)

URL = "https://mcp.example.com/mcp"


def test_oauth_object_and_false_are_accepted() -> None:
    config = parse_server(
        "s",
        {
            "url": URL,
            "oauth": {
                "clientId": "c1",
                "clientSecret": "${MY_SECRET}",
                "scopes": ["a", "b"],
                "redirectPort": 8765,
                "clientMetadataUrl": "https://me.example.org/client.json",
            },
        },
    )
    assert config.oauth == OAuthConfig(
        client_id="c1",
        client_secret="${MY_SECRET}",
        scopes=("a", "b"),
        redirect_port=8765,
        client_metadata_url="https://me.example.org/client.json",
    )
    assert parse_server("s", {"url": URL, "oauth": False}).oauth is False
    assert parse_server("s", {"url": URL}).oauth is None


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        (True, "s.oauth: expected an object or false"),
        ({"grant": "password"}, "s.oauth.grant: expected one of authorization_code"),
        ({"redirectPort": 70000}, "s.oauth.redirectPort: expected a port number"),
        ({"clientMetadataUrl": "http://x/c.json"}, "s.oauth.clientMetadataUrl: expected an https"),
        ({"grant": "client_credentials"}, "s.oauth.clientId: required for the client_credentials"),
        ({"clientSecret": "a", "privateKey": "b"}, "give clientSecret or privateKey, not both"),
        ({"clientSecert": "typo"}, "s.oauth: object contains unknown field clientSecert"),
        ({"scopes": "a b"}, "s.oauth.scopes: expected array"),
        ({"tokenEndpointAuthMethod": "tls"}, "s.oauth.tokenEndpointAuthMethod: expected one of"),
        ({"grant": "jwt_bearer"}, "s.oauth.clientId: required for the jwt_bearer grant"),
        ({"grant": "jwt_bearer", "clientId": "w"}, "this grant needs assertion or assertionFile"),
        ({"assertion": "a", "assertionFile": "/f"}, "give assertion or assertionFile, not both"),
        (
            {"grant": "identity_assertion", "clientId": "c", "idToken": "t"},
            "s.oauth.idpTokenEndpoint: the identity provider's token URL, required",
        ),
        (
            {"grant": "identity_assertion", "clientId": "c", "idpTokenEndpoint": "https://i/t"},
            "this grant needs idToken or idTokenFile",
        ),
    ],
)
def test_bad_oauth_is_a_clear_error(oauth: object, message: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("s", {"url": URL, "oauth": oauth})
    assert message in caught.value.message


def test_oauth_on_stdio_is_refused() -> None:
    with pytest.raises(InvalidSettings, match="only a streamable_http server logs in"):
        parse_server("s", {"command": "x", "oauth": {"clientId": "c"}})


def test_client_secret_and_private_key_are_secrets() -> None:
    raw = {"url": URL, "oauth": {"clientId": "c1", "clientSecret": "literal-secret-1"}}
    masked = masked_entry(raw)
    assert masked["oauth"] == {"clientId": "c1", "clientSecret": "********"}
    assert raw["oauth"]["clientSecret"] == "literal-secret-1"  # the stored entry is untouched
    assert restore_masked(masked, raw)["oauth"]["clientSecret"] == "literal-secret-1"
    by_reference = {"url": URL, "oauth": {"privateKey": "${PEM_KEY}"}}
    assert masked_entry(by_reference)["oauth"]["privateKey"] == "${PEM_KEY}"
    config = parse_server("s", {"url": URL, "oauth": {"clientSecret": "${SECRET_VAR}"}})
    assert "expanded-secret-value" in secret_values(config, {"SECRET_VAR": "expanded-secret-value"})


def test_secret_references_expand_at_connect_time() -> None:
    config = parse_server("s", {"url": URL, "oauth": {"clientSecret": "${SECRET_VAR}"}})
    expanded = expand_server("s", config, {"SECRET_VAR": "the-value"})
    assert isinstance(expanded.oauth, OAuthConfig)
    assert expanded.oauth.client_secret == "the-value"
    with pytest.raises(InvalidSettings, match=r"s.oauth.clientSecret: environment variable"):
        expand_server("s", config, {})


def test_the_tokens_of_grants_without_a_person_are_secrets() -> None:
    oauth = {
        "assertion": "workload-jwt-value",
        "idToken": "${ID_TOKEN}",
        "idpClientSecret": "idp-secret-3",
    }
    masked = masked_entry({"url": URL, "oauth": oauth})["oauth"]
    assert masked == {
        "assertion": "********",
        "idToken": "${ID_TOKEN}",
        "idpClientSecret": "********",
    }
    config = parse_server("s", {"url": URL, "oauth": oauth})
    found = secret_values(config, {"ID_TOKEN": "id-token-value"})
    assert {"workload-jwt-value", "id-token-value", "idp-secret-3"} <= set(found)
    expanded = expand_server("s", config, {"ID_TOKEN": "id-token-value"})
    assert isinstance(expanded.oauth, OAuthConfig)
    assert expanded.oauth.id_token == "id-token-value"
