"""The A2A client role over the JSON-RPC binding (spec 3.1, 8.2, 8.3.2, 9).

This package's ``__init__`` is the client's public face; its modules are private. Connect with
:meth:`A2AClient.connect` (card discovery and interface selection), call one coroutine per
operation of spec 3.1, read streams as :class:`EventStream`, and receive push notifications with
:class:`PushReceiver`. Every error raised derives from :class:`a2a_wire.errors.A2AError`.

Specification: https://a2a-protocol.org/v1.0.1/specification/
"""

from a2a_wire._protocol.states import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    is_interrupted,
    is_settled,
    is_terminal,
)
from a2a_wire._protocol.wire import WELL_KNOWN_PATH
from a2a_wire.client._api_key import CardApiKey
from a2a_wire.client._card_resolver import (
    CachedCard,
    CardCache,
    CardResolver,
    SignatureCheck,
    card_url,
    interface_url,
    select_interface,
)
from a2a_wire.client._client import (
    A2AClient,
    ClientSettings,
    EventStream,
    ResumableStream,
)
from a2a_wire.client._credentials import (
    BEARER,
    CredentialProvider,
    CredentialRequest,
    EnvCredentials,
    FileCredentials,
    HeaderScheme,
    NoCredentials,
    PerAgentCredentials,
    Secret,
    StaticCredentials,
    api_key_header,
    read_secret,
)
from a2a_wire.client._errors import (
    AddressNotAllowedError,
    AuthenticationError,
    ClientError,
    ClientTimeoutError,
    ConnectError,
    ConnectTimeoutError,
    CredentialsError,
    HTTPStatusError,
    IncompleteStreamError,
    InterfaceOffer,
    InvalidAgentCardError,
    NoCompatibleInterfaceError,
    ReadTimeoutError,
    RedirectRefusedError,
    ResponseTooLargeError,
    StreamIdleTimeoutError,
    TotalTimeoutError,
    TransportError,
    TruncatedResponseError,
    UnexpectedContentTypeError,
    UnexpectedResponseError,
    WaitTimeoutError,
    safe_url,
)
from a2a_wire.client._oauth import ClientCredentials
from a2a_wire.client._observe import ExchangeObserver, ExchangeWatch
from a2a_wire.client._push_receiver import (
    DUPLICATE_WINDOW,
    EventCallback,
    PushReceiver,
    create_receiver_app,
    register_webhook,
    remove_webhook,
    task_id_of,
)
from a2a_wire.client._stream import Resubscription

__all__ = [
    "BEARER",
    "DUPLICATE_WINDOW",
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "WELL_KNOWN_PATH",
    "A2AClient",
    "AddressNotAllowedError",
    "AuthenticationError",
    "CachedCard",
    "CardApiKey",
    "CardCache",
    "CardResolver",
    "ClientCredentials",
    "ClientError",
    "ClientSettings",
    "ClientTimeoutError",
    "ConnectError",
    "ConnectTimeoutError",
    "CredentialProvider",
    "CredentialRequest",
    "CredentialsError",
    "EnvCredentials",
    "EventCallback",
    "EventStream",
    "ExchangeObserver",
    "ExchangeWatch",
    "FileCredentials",
    "HTTPStatusError",
    "HeaderScheme",
    "IncompleteStreamError",
    "InterfaceOffer",
    "InvalidAgentCardError",
    "NoCompatibleInterfaceError",
    "NoCredentials",
    "PerAgentCredentials",
    "PushReceiver",
    "ReadTimeoutError",
    "RedirectRefusedError",
    "ResponseTooLargeError",
    "Resubscription",
    "ResumableStream",
    "Secret",
    "SignatureCheck",
    "StaticCredentials",
    "StreamIdleTimeoutError",
    "TotalTimeoutError",
    "TransportError",
    "TruncatedResponseError",
    "UnexpectedContentTypeError",
    "UnexpectedResponseError",
    "WaitTimeoutError",
    "api_key_header",
    "card_url",
    "create_receiver_app",
    "interface_url",
    "is_interrupted",
    "is_settled",
    "is_terminal",
    "read_secret",
    "register_webhook",
    "remove_webhook",
    "safe_url",
    "select_interface",
    "task_id_of",
]
