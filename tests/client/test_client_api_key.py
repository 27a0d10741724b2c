"""CardApiKey: an API key where the card's APIKeySecurityScheme says, against our server and on
hand-made cards (cookie, query)."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestServer
from server_support import ScriptedAgent, make_card

from a2a_wire.client import (
    A2AClient,
    CardApiKey,
    CardCache,
    ClientSettings,
    CredentialRequest,
    CredentialsError,
)
from a2a_wire.server import RegisteredClient, SecurityConfig, create_app
from a2a_wire.types import (
    APIKeySecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    StringList,
)

KEY = "agent-key-3c9d1e"


@pytest.mark.parametrize("header", ["X-API-Key", "X-Agent-Key"])
async def test_the_key_goes_in_the_header_the_card_names(header: str) -> None:
    client_entry = RegisteredClient.from_secrets("keyed", api_key=KEY, log2_n=4)
    security = SecurityConfig(clients=[client_entry], api_key_header=header)
    server = TestServer(create_app(make_card(), ScriptedAgent(), security=security))
    await server.start_server()
    try:
        async with await A2AClient.connect(
            str(server.make_url("/")),
            settings=ClientSettings(allow=["127.0.0.1"]),
            credentials=CardApiKey(KEY),
            card_cache=CardCache(),
        ) as client:
            message = Message(role=Role.USER, parts=[Part(text="hi")], message_id="m")
            answer = await client.send_message(SendMessageRequest(message=message))
            assert answer.task is not None
    finally:
        await server.close()


def card_with(location: str, name: str = "session") -> object:
    card = make_card()
    scheme = APIKeySecurityScheme(location=location, name=name)
    card.security_schemes = {"key": SecurityScheme(api_key_security_scheme=scheme)}
    card.security_requirements = [SecurityRequirement(schemes={"key": StringList()})]
    return card


async def test_a_cookie_key_is_sent_as_a_cookie() -> None:
    request = CredentialRequest("https://agent.example/", "SendMessage", card_with("cookie"))  # type: ignore[arg-type]
    assert await CardApiKey(KEY).headers(request) == {"Cookie": f"session={KEY}"}


@pytest.mark.parametrize(
    ("card", "key", "message"),
    [
        (card_with("query", "api_key"), KEY, "only header and cookie keys are sent"),
        (card_with("cookie"), "a;b", "not cookie-safe"),
        (card_with("header", "Bad Header"), KEY, "is not a name"),
        (card_with("header", "X-Key"), "line\nbreak", "not allowed in an HTTP header"),
        (make_card(), KEY, "offers no API-key scheme"),
        (None, KEY, "needs the agent card"),
    ],
)
async def test_keys_that_cannot_travel_are_refused_without_showing_them(
    card: object, key: str, message: str
) -> None:
    request = CredentialRequest("https://agent.example/", "SendMessage", card)  # type: ignore[arg-type]
    with pytest.raises(CredentialsError, match=message) as info:
        await CardApiKey(key).headers(request)
    assert key not in str(info.value)
    assert key not in repr(CardApiKey(key))
