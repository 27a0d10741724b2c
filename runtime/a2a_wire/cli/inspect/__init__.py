"""``a2a-wire inspect``: a local web page to explore and debug an A2A 1.0 agent (docs/inspector.md).

The command (:mod:`~a2a_wire.cli.inspect._command`) serves, on 127.0.0.1 behind a per-run token
(:mod:`~a2a_wire.cli.inspect._app`), a page of plain HTML, CSS and JavaScript modules shipped in
``static/``; the page talks only to the inspector, which talks to agents with a2a-wire's client
(:mod:`~a2a_wire.cli.inspect._agent`, :mod:`~a2a_wire.cli.inspect._api`), records their traffic
(:mod:`~a2a_wire.cli.inspect._traffic`), checks their cards (:mod:`~a2a_wire.cli.inspect._checks`)
and streams everything to the page as it happens (:mod:`~a2a_wire.cli.inspect._live`).
"""

from a2a_wire.cli.inspect._command import inspect

__all__ = ["inspect"]
