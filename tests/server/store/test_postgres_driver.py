"""The PostgreSQL store without its driver: importing works, opening says what to install."""

from __future__ import annotations

import sys

import pytest

from a2a_wire.server.store import PostgresTaskStore
from a2a_wire.server.store.postgresql._connection import load_driver


def test_without_asyncpg_the_error_gives_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # import asyncpg now raises ImportError
    with pytest.raises(RuntimeError) as refused:
        load_driver()
    assert str(refused.value) == (
        'the PostgreSQL store needs asyncpg: pip install "a2a-wire[postgresql]"'
    )
    assert isinstance(refused.value.__cause__, ImportError)


async def test_opening_a_store_without_asyncpg_raises_that_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)
    store = PostgresTaskStore("postgresql://127.0.0.1:1/none")
    with pytest.raises(RuntimeError, match=r'pip install "a2a-wire\[postgresql\]"'):
        await store.open()
