"""What the server accepts in a client's message before any work is done (spec 3.1.1, 4.1.4-4.1.6).

* ``role`` must be a role the pinned proto declares, other than ``ROLE_UNSPECIFIED``: a stored
  task must stay readable by strict peers, so an unknown role is -32602 on ``message.role``.
* A part whose content kind this version does not know (``which_content()`` is ``None``: no
  member, or only members of a newer proto) is skipped and logged, never stored as an empty
  part. A message left with no part is -32602 on ``message.parts``.
* At most ``max_parts`` parts (a :class:`~a2a_wire.server._settings.ServerSettings` limit).
"""

from __future__ import annotations

import logging

from a2a_wire.errors import InvalidParamsError
from a2a_wire.server._limits import check_parts
from a2a_wire.types import Message, Role

__all__ = ["check_message"]

log = logging.getLogger("a2a_wire.server")


def check_message(message: Message, max_parts: int) -> None:
    """Check a client's message in place, dropping parts of unknown kinds.

    Raises:
        InvalidParamsError: unknown or unspecified role, no part of a known kind, or too many
            parts; the violation names the field.
    """
    role = message.role
    if not role.is_known or role is Role.UNSPECIFIED:
        raise InvalidParamsError(
            f"Unknown message role {str(role.value)[:40]!r}",
            violations=[("message.role", "must be ROLE_USER or ROLE_AGENT")],
        )
    known = [part for part in message.parts if part.which_content() is not None]
    if len(known) != len(message.parts):
        log.info(
            "skipped %d part(s) of unknown kind in message %s",
            len(message.parts) - len(known),
            message.message_id[:80],
        )
        if not known:
            raise InvalidParamsError(
                "The message has no part of a known kind (text, raw, url or data)",
                violations=[("message.parts", "no part of a known kind")],
            )
        message.parts = known
    check_parts(message, max_parts)
