"""A small OAuth 2.0 / OpenID Connect authorization server on 127.0.0.1 for the JWT tests.

The token endpoint is Authlib's ``AuthorizationServer`` with its client-credentials grant
(``client_secret_basic``, ``client_secret_post``, and ``private_key_jwt`` by Authlib's RFC 7523
client assertion) and its RFC 9068 JWT access-token
generator, behind aiohttp routes; discovery and JWKS are plain routes beside it. The keys are
joserfc's (Authlib's own JOSE library). A test rotates the keys, makes the JWKS endpoint fail,
changes the discovery document, mints tokens with the claims it wants, and reads how often each
endpoint was asked.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, OAuth2Request
from authlib.oauth2.rfc6749.grants import ClientCredentialsGrant
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

AUDIENCE = "https://agent.example/a2a"


@dataclass
class OAuthClient(ClientMixin):  # type: ignore[misc]
    """A client registered at the provider."""

    client_id: str
    secret: str
    scopes: tuple[str, ...] = ("a2a",)
    methods: tuple[str, ...] = ("client_secret_basic", "client_secret_post", "private_key_jwt")
    public_key: Any = None  # for private_key_jwt: the client's public JWK (joserfc)

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return ""

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s in self.scopes)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return client_secret == self.secret

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint == "token" and method in self.methods

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "client_credentials"


class _Grant(ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


class _Assertion(JWTBearerClientAssertion):  # type: ignore[misc]
    """``private_key_jwt``: the client's assertion, checked against its registered public key."""

    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __init__(self, provider: Provider) -> None:
        super().__init__(validate_jti=True)
        self.provider = provider
        self.seen: set[str] = set()

    def get_audiences(self) -> list[str]:
        return [self.provider.token_url]

    def validate_jti(self, claims: Any, jti: str) -> bool:
        fresh = jti not in self.seen
        self.seen.add(jti)
        return fresh

    def resolve_client_public_key(self, client: OAuthClient) -> Any:
        return client.public_key


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, method: str, url: str, headers: Any, form: dict[str, str]) -> None:
        super().__init__(method=method, uri=url, headers=headers)
        self.payload = BasicOAuth2Payload(form)
        self._form = form

    @property
    def args(self) -> dict[str, str]:
        return {}

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Server(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, provider: Provider) -> None:
        super().__init__(scopes_supported=None)
        self.provider = provider

    def query_client(self, client_id: str) -> OAuthClient | None:
        return self.provider.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        self.provider.issued.append(token)

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request  # built by the aiohttp handler (the form is read there)

    def create_json_request(self, request: Any) -> Any:
        raise NotImplementedError

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass


class _Tokens(JWTBearerTokenGenerator):  # type: ignore[misc]
    def __init__(self, provider: Provider) -> None:
        super().__init__(
            issuer=provider.issuer, expires_generator=lambda *_: provider.token_seconds
        )
        self.provider = provider

    def get_jwks(self) -> KeySet:
        return KeySet([self.provider.signing_key])  # a key set: joserfc names the kid

    def get_audiences(self, client: Any, user: Any, scope: Any) -> str:
        return self.provider.audience

    def access_token_generator(self, client: Any, grant_type: str, user: Any, scope: Any) -> str:
        self.provider.token_hits += 1
        token: str = super().access_token_generator(client, grant_type, user, scope)
        return token


def new_key() -> RSAKey:
    """A fresh RSA signing key with a random kid."""
    return RSAKey.generate_key(2048, parameters={"kid": uuid.uuid4().hex[:12], "use": "sig"})


@dataclass
class Provider:
    """The authorization server; :meth:`start` it inside a running loop, :meth:`stop` it."""

    audience: str = AUDIENCE
    token_seconds: int = 3600
    jwks_cache_control: str = "max-age=300"
    jwks_status: int = 200
    discovery_overrides: dict[str, Any] = field(default_factory=dict)
    clients: dict[str, OAuthClient] = field(default_factory=dict)
    issued: list[dict[str, Any]] = field(default_factory=list)
    discovery_hits: int = 0
    jwks_hits: int = 0
    token_hits: int = 0
    host: str = "127.0.0.1"

    def __post_init__(self) -> None:
        self.keys: list[RSAKey] = [new_key()]
        self.signing_key = self.keys[0]
        self.issuer = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> Provider:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/jwks", self._jwks)
        app.router.add_post("/token", self._token)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.issuer = f"http://{self.host}:{port}"
        self.server = _Server(self)
        self.server.register_grant(_Grant)
        self.server.register_client_auth_method("private_key_jwt", _Assertion(self))
        self.server.register_token_generator("default", _Tokens(self))
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    def add_client(
        self, client_id: str, secret: str, *scopes: str, public_key: Any = None
    ) -> OAuthClient:
        client = OAuthClient(client_id, secret, scopes or ("a2a",), public_key=public_key)
        self.clients[client_id] = client
        return client

    def rotate(self, *, retire: bool = False) -> RSAKey:
        """Publish a new key and sign with it; ``retire`` drops the old ones from the JWKS."""
        key = new_key()
        self.keys = [key] if retire else [*self.keys, key]
        self.signing_key = key
        return key

    def mint(
        self,
        *,
        header: dict[str, Any] | None = None,
        key: RSAKey | None = None,
        lifetime: int = 600,
        **claims: Any,
    ) -> str:
        """A token signed with the current key (or ``key``); ``claims`` add to or replace the
        defaults (``None`` removes one)."""
        key = key or self.signing_key
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": "minted",
            "client_id": "minted",
            "scope": "a2a",
            "iat": now,
            "exp": now + lifetime,
            "jti": uuid.uuid4().hex,
        }
        body.update(claims)
        body = {name: value for name, value in body.items() if value is not None}
        head = {"alg": "RS256", "typ": "at+jwt", "kid": key.kid, **(header or {})}
        return jwt.encode(head, body, key, algorithms=[head["alg"]])

    async def _discovery(self, request: web.Request) -> web.Response:
        self.discovery_hits += 1
        document = {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/jwks",
            "token_endpoint": self.token_url,
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": ["RS256"],
            **self.discovery_overrides,
        }
        return web.json_response(document)

    async def _jwks(self, request: web.Request) -> web.Response:
        self.jwks_hits += 1
        if self.jwks_status != 200:
            return web.Response(status=self.jwks_status, text="down")
        keys = [key.as_dict(private=False) for key in self.keys]
        headers = {"Cache-Control": self.jwks_cache_control}
        return web.json_response({"keys": keys}, headers=headers)

    async def _token(self, request: web.Request) -> web.Response:
        form = {name: str(value) for name, value in (await request.post()).items()}
        oauth_request = _Request(request.method, str(request.url), request.headers, form)
        status, body, headers = self.server.create_token_response(oauth_request)
        headers = {name: value for name, value in headers if name.lower() != "content-type"}
        return web.json_response(body, status=status, headers=headers)
