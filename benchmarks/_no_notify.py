"""``a2a-wire serve`` that drops every notification of its events channel as it arrives.

benchmarks/scale_latency.py runs process B of its ``ours-poll`` system with this in place of the
``a2a-wire`` command (``python benchmarks/_no_notify.py serve ...``): the listening connection
stays up and its cancel channel works, but no ``NOTIFY`` of a commit on another process wakes a
waiting stream, which then only finds new events by the fallback poll
(``[postgresql] poll_interval_seconds``). This shows what a lost notification costs.
"""

import sys
from typing import Any

from a2a_wire.cli import main
from a2a_wire.server.store.postgresql import _listen


def _dropped(self: Any, conn: Any, pid: int, channel: str, payload: object) -> None:
    """In place of ``Listener._notified``: the notification is lost."""


_listen.Listener._notified = _dropped  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.argv[0] = "a2a-wire"
    sys.exit(main())
