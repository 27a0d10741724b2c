"""The agent the page looks at: its card as fetched, the findings, and a client on it.

Opening an agent (spec 8.2, 8.3.2) fetches ``{URL}/.well-known/agent-card.json`` with the
client's :class:`~a2a_wire.client.CardResolver` (address guard, redirect refusal, size cap,
``card_timeout``) with the traffic log watching, keeps the JSON value exactly as received,
checks it (:mod:`a2a_wire.cli.inspect._checks`), and, when the card decodes and offers a
JSONRPC 1.0 interface, opens an :class:`~a2a_wire.client.A2AClient` on that interface with the
command line's credential, allowlist and timeout. A card the client cannot use is still shown
with its findings; only the calls are then unavailable. The page may then pick one of the card's
security schemes instead of the command line's credential (:meth:`AgentSession.use`,
:mod:`a2a_wire.cli.inspect._identity`); opening an agent goes back to the command line's.

The host of a URL typed into the page is exempt from the address guard, as the URL given to any
other command is (:meth:`~a2a_wire.cli._common.ClientOptions.settings`); addresses the agent's
answers point to are not.
"""

from __future__ import annotations

from typing import Any

from a2a_wire import codec
from a2a_wire.cli._common import ClientOptions
from a2a_wire.cli.inspect._checks import Verify, check_card
from a2a_wire.cli.inspect._identity import Identity, IdentityError, pick, schemes
from a2a_wire.cli.inspect._outgoing import Outgoing
from a2a_wire.cli.inspect._traffic import TrafficLog, describe_error
from a2a_wire.client import (
    A2AClient,
    CardResolver,
    ClientError,
    ClientSettings,
    card_url,
    interface_url,
    select_interface,
)
from a2a_wire.errors import A2AError
from a2a_wire.types import AgentCard

__all__ = ["AgentSession", "NotConnectedError"]


class NotConnectedError(ClientError):
    """The page asked for a call before an agent with a usable interface was opened."""


class AgentSession:
    """One agent at a time, as the page chose it.

    Args:
        opts: The command line's client options (credential, allowlist, timeout).
        traffic: The log every exchange is shown in.
        verify: Checks card signatures against the trusted keys, if any were given.
    """

    def __init__(self, opts: ClientOptions, traffic: TrafficLog, verify: Verify | None) -> None:
        self.opts = opts
        self.traffic = traffic
        self.verify = verify
        self.view: dict[str, Any] | None = None
        self.outgoing = Outgoing(Identity(opts.credentials()), traffic)
        self._settings = ClientSettings()
        self._client: A2AClient | None = None

    @property
    def client(self) -> A2AClient:
        """The client on the open agent's JSON-RPC interface.

        Raises:
            NotConnectedError: No agent is open, or its card offers no usable interface.
        """
        if self._client is None:
            raise NotConnectedError("open an agent whose card has a JSONRPC 1.0 interface first")
        return self._client

    async def close(self) -> None:
        """Close the client of the open agent."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def open(self, url: str) -> dict[str, Any]:
        """Fetch and check the card at ``url`` and connect to its interface.

        Args:
            url: The agent's base URL (or its card URL).

        Returns:
            What the Card pane shows: ``url``, ``cardUrl``, ``document`` (as received, or
            ``None``), ``findings``, ``interface`` (the chosen one, or ``None``) and ``error``.
        """
        await self.close()
        where = card_url(url)
        view: dict[str, Any] = {"url": url, "cardUrl": where, "document": None}
        view.update(findings=[], interface=None, error=None, extended=None, schemes=[])
        self.view = view
        settings = self._settings = self.opts.settings(url)
        self.outgoing.identity = Identity(self.opts.credentials(settings))
        view["identity"] = self.outgoing.identity.summary()
        try:
            async with CardResolver(settings=settings, observer=self.traffic) as resolver:
                view["document"] = await resolver.fetch_document(where)
        except A2AError as exc:
            view["error"] = describe_error(exc)
            return view
        view["findings"] = [f.to_dict() for f in check_card(view["document"], self.verify)]
        try:
            card = AgentCard.from_dict(view["document"])
            iface = select_interface(card)
        except (codec.DecodeError, A2AError) as exc:
            view["error"] = describe_error(exc)
            return view
        view["interface"] = iface.to_dict()
        view["schemes"] = schemes(card)
        self._client = A2AClient(
            interface_url(where, iface),
            tenant=iface.tenant,
            settings=settings,
            credentials=self.outgoing,
            card=card,
            observer=self.traffic,
        )
        return view

    async def use(self, body: dict[str, Any]) -> dict[str, Any]:
        """Present the scheme ``body["scheme"]`` of the open agent's card from now on.

        Args:
            body: ``scheme`` (``""``: the command line's credential again) and its values
                (:func:`~a2a_wire.cli.inspect._identity.pick`).

        Returns:
            The identity's summary (never a secret or a token).

        Raises:
            NotConnectedError: No usable agent is open.
            IdentityError: The scheme or the values cannot be used.
        """
        client = self.client
        if client.card is None:
            raise IdentityError("the open agent has no card")
        if not body.get("scheme"):
            identity = Identity(self.opts.credentials(self._settings))
        else:
            identity = await pick(client.card, client.url, body, self._settings)
        self.outgoing.identity = identity
        summary = identity.summary()
        if self.view is not None:
            self.view["identity"] = summary
        return summary

    async def extended(self) -> dict[str, Any]:
        """GetExtendedAgentCard (spec 3.1.11) and its findings, on the card as decoded.

        Raises:
            NotConnectedError: No usable agent is open.
            A2AError: The agent refused or failed.
        """
        card = await self.client.get_extended_agent_card()
        document = card.to_dict()
        findings = [f.to_dict() for f in check_card(document, self.verify)]
        extended = {"document": document, "findings": findings}
        if self.view is not None:
            self.view["extended"] = extended
        return extended
