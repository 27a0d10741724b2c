"""Sans-IO protocol core shared by both roles: no asyncio, no aiohttp, no I/O.

JSON-RPC envelopes (:mod:`.jsonrpc`), Server-Sent Events (:mod:`.sse`), wire constants
(:mod:`.wire`), the wire identity of errors (:mod:`.rpc_error`), task states (:mod:`.states`), the task lifecycle table (:mod:`.tasks`) and ids
(:mod:`.ids`). Private: the public names are re-exported by the role faces.
"""
