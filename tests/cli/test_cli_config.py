"""The ``a2a-wire serve`` configuration: defaults, every section, and errors with their lines."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from e2e_support import ServerProcess, ShoutAgent, cli, environment, free_port, write_config
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire.cli._app import build_card, build_store
from a2a_wire.cli._skills import DelegateSkill, EchoSkill
from a2a_wire.cli.config import ConfigError, default_data_dir, load
from a2a_wire.cli.config._lines import key_lines, line_of
from a2a_wire.server import hash_secret, verify_secret
from a2a_wire.server.store import SQLiteTaskStore


def test_embedded_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    config = load()
    assert config.source is None
    assert (config.server.host, config.server.port) == ("127.0.0.1", 8765)
    assert config.server.data_dir == tmp_path / "xdg" / "a2a-wire"
    assert config.server.database.name == "tasks.sqlite3"
    assert [s.id for s in config.skills] == ["echo", "delegate"]
    assert config.default_skill.id == "echo"
    assert isinstance(config.skills[0].executor, EchoSkill)
    assert isinstance(config.skills[1].executor, DelegateSkill)
    card = build_card(config)
    assert card.capabilities is not None
    assert card.capabilities.streaming and card.capabilities.push_notifications
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == Path.home() / ".local" / "share" / "a2a-wire"


def test_every_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "full.toml"
    path.write_text(
        """
[server]
host = "0.0.0.0"
port = 9000
public_url = "https://agent.example.com"
rpc_path = "/a2a"
data_dir = "state"
storage = "memory"
log_level = "DEBUG"
log_format = "json"
keepalive_seconds = 5
shutdown_grace_seconds = 3.5

[limits]
max_body_bytes = 2048
max_batch_size = 7

[card]
name = "full"
version = "2.0"
default_input_modes = ["text/plain"]
provider = { organization = "Example", url = "https://example.com" }
push_notifications = false

[network]
allow = ["10.0.0.0/8"]

[push]
allow_http = true
max_attempts = 3
allow = ["hooks.internal"]

[[skills]]
id = "shout"
executor = "e2e_support:make_shout"
tags = ["loud"]
default = true
[skills.options]
suffix = "?"

[[skills]]
id = "plain"
executor = "e2e_support:ShoutAgent"

[[skills]]
executor = "delegate"
options = { agent = "peer" }

[[clients]]
id = "alice"
token_hash = "TOKEN_HASH"
skills = ["shout"]

[[clients]]
id = "bob"
api_key_env = "BOB_KEY"

[security]
extended_card = true

[[agents]]
name = "peer"
url = "http://peer.internal:8000"
token_env = "PEER_TOKEN"
allow = ["peer.internal"]
""".replace("TOKEN_HASH", hash_secret("alice-token", log2_n=4)),
        encoding="utf-8",
    )
    monkeypatch.setenv("BOB_KEY", "bob-key")
    config = load(path, port=9100)
    assert config.server.port == 9100  # the flag wins over the file
    assert config.server.data_dir == tmp_path / "state"
    assert config.server.log_level == "debug" and config.server.storage == "memory"
    settings = config.settings
    assert (settings.rpc_path, settings.public_url) == ("/a2a", "https://agent.example.com")
    assert (settings.max_body_bytes, settings.max_batch_size) == (2048, 7)
    assert settings.keepalive_seconds == 5.0 and settings.shutdown_grace_seconds == 3.5
    assert settings.push.allow_http and settings.push.max_attempts == 3
    assert settings.push.allowlist.allow_hosts == frozenset({"hooks.internal"})
    assert [s.id for s in config.skills] == ["shout", "plain", "delegate"]
    shout = config.skills[0].executor
    assert isinstance(shout, ShoutAgent) and shout.suffix == "?"
    alice, bob = config.clients
    assert alice.permitted == frozenset({"shout"}) and bob.permitted is None
    assert verify_secret("bob-key", bob.api_key_hash) and not bob.token_hash
    assert config.security.extended_card
    peer = config.agents["peer"]
    assert peer.allow == ("10.0.0.0/8", "peer.internal")
    remote = peer.remote_agent()
    assert remote.settings.policy.allow_hosts == frozenset({"peer.internal"})
    assert "PEER_TOKEN" in repr(remote.credentials)
    card = build_card(config)
    assert card.provider is not None and card.provider.organization == "Example"
    assert card.capabilities is not None and card.capabilities.push_notifications is False
    assert card.capabilities.extended_agent_card is True
    assert [s.tags for s in card.skills][0] == ["loud"]


BAD = """\
[server]
port = "eighty"
colour = "blue"

[[skills]]
executor = "echo"
options = { chunk_size = 0 }

[[skills]]
id = "ghost"
executor = "nowhere.at.all:Agent"

[[skills]]
executor = "echo"

[[clients]]
id = "bob"
token_env = "UNSET_VARIABLE_FOR_TEST"

[[agents]]
name = "x"
url = "ftp://x"
"""


def test_every_problem_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BAD, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path)
    rendered = str(info.value).splitlines()
    assert rendered == [
        f"{path}:2: server.port: must be an integer, not a string",
        f"{path}:3: server.colour: unknown key",
        f"{path}:7: skills[0].options: options for 'echo' refused: chunk_size must be at least 1",
        f"{path}:11: skills[1].executor: cannot load 'nowhere.at.all:Agent': "
        "ModuleNotFoundError: No module named 'nowhere'",
        f"{path}:13: skills[2].id: skill 'echo' is defined twice",
        f"{path}:18: clients[0].token_env: environment variable UNSET_VARIABLE_FOR_TEST is not set",
        f"{path}:22: agents[0].url: must be an absolute http(s) URL",
    ]


def test_toml_syntax_error_has_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('[server]\nport = 80\nhost = "x\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}:3: not valid TOML")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "absent.toml")


def test_serve_refuses_invalid_config_without_starting(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = write_config(
        tmp_path / "bad.toml",
        '[server]\nport = {port}\ndata_dir = "{data}"\n\n[limits]\nmax_batch_size = -1\n',
        port=free_port(),
        data=data,
    )
    result = cli("serve", "--config", str(path), timeout=30)
    assert result.returncode == 6
    assert result.stderr.splitlines() == [
        f"error: invalid configuration {path}",
        f"  {path}:6: limits.max_batch_size: must be >= 0, not -1",
    ]
    assert not data.exists()  # nothing was created: the server never started
    checked = cli("serve", "--config", str(path), "--check")
    assert checked.returncode == 6


def test_serve_and_db_migrate_read_one_variable_and_report_a_bad_file_alike(
    tmp_path: Path,
) -> None:
    path = write_config(tmp_path / "bad.toml", "[limits]\nmax_batch_size = -1\n")
    env = environment(A2A_WIRE_CONFIG=str(path))
    expected = [
        f"error: invalid configuration {path}",
        f"  {path}:2: limits.max_batch_size: must be >= 0, not -1",
    ]
    for args in (("serve", "--check"), ("db", "migrate", "--dsn", "postgresql://127.0.0.1:1/x")):
        result = cli(*args, env=env)
        assert (result.returncode, result.stderr.splitlines()) == (6, expected), args


def test_serve_check_and_start_errors(tmp_path: Path) -> None:
    env = environment(XDG_DATA_HOME=str(tmp_path / "xdg"))
    ok = cli("serve", "--check", env=env)
    assert ok.returncode == 0 and "skills echo, delegate" in ok.stdout
    assert not (tmp_path / "xdg").exists()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    taken = cli("serve", "--data-dir", str(blocker / "sub"), "--port", str(free_port()), env=env)
    assert taken.returncode == 1 and "error: cannot start" in taken.stderr


# -- the line finder ---------------------------------------------------------------------------

_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_TABLES = st.dictionaries(_KEYS, st.dictionaries(_KEYS, st.integers(), max_size=4), max_size=4)


@given(_TABLES, st.lists(st.sampled_from(["", "# note = 1", "   "]), max_size=3))
def test_key_lines_find_every_key(tables: dict[str, dict[str, int]], filler: list[str]) -> None:
    lines: list[str] = []
    expected: dict[tuple[str | int, ...], int] = {}
    for name, keys in tables.items():
        lines.extend(filler)
        lines.append(f"[[{name}]]")
        expected[(name, 0)] = len(lines)
        for key, value in keys.items():
            lines.extend(filler)
            lines.append(f"{key} = {value}  # {key} = 0")
            expected[(name, 0, key)] = len(lines)
    found = key_lines("\n".join(lines))
    assert found == expected


def test_key_lines_skip_values_that_look_like_keys() -> None:
    text = '''top = 1
multi = """
fake = 2
"""
array = [
  "x = 3",
  { inner = 4 },
]
[a.b]
"quoted key" = 5
[[list]]
[[list]]
[list.sub]
deep = 6
'''
    lines = key_lines(text)
    assert lines == {
        ("top",): 1,
        ("multi",): 2,
        ("array",): 5,
        ("a", "b"): 9,
        ("a", "b", "quoted key"): 10,
        ("list", 0): 11,
        ("list", 1): 12,
        ("list", 1, "sub"): 13,
        ("list", 1, "sub", "deep"): 14,
    }
    assert line_of(lines, ("array", 1, "inner")) == 5
    assert line_of(lines, ("nothing",)) is None


def test_environment_has_no_inherited_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WIRE_TOKEN", "leak")
    assert "A2A_WIRE_TOKEN" not in environment()
    assert os.environ["A2A_WIRE_TOKEN"] == "leak"


def test_sqlite_busy_timeout_reaches_the_store(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nsqlite_busy_timeout_seconds = 0.25\n',
        encoding="utf-8",
    )
    store = build_store(load(path))
    assert isinstance(store, SQLiteTaskStore) and store._busy_ms == 250
    path.write_text("[server]\nsqlite_busy_timeout_seconds = -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="sqlite_busy_timeout_seconds: must be >= 0"):
        load(path)


def test_a_second_server_on_one_data_directory_says_what_holds_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    with ServerProcess(
        ["--data-dir", str(data), "--port", str(port)], tmp_path / "first.log", port
    ):
        second = cli("serve", "--data-dir", str(data), "--port", str(free_port()), timeout=60)
    assert second.returncode == 1
    assert second.stderr.splitlines()[-1] == (
        f"error: cannot start: the task database {data / 'tasks.sqlite3'} is open in another"
        " process, most likely another a2a-wire serve on the same data directory (SQLite allows"
        " one); stop that one, or give this one its own --data-dir ([server] data_dir)"
    )


def test_a_write_lock_of_another_program_at_start_says_what_to_do(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    database = data / "tasks.sqlite3"
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("CREATE TABLE other (k INTEGER)")
        holder.execute("BEGIN IMMEDIATE")
        config = tmp_path / "serve.toml"
        config.write_text(
            f'[server]\ndata_dir = "{data}"\nsqlite_busy_timeout_seconds = 0.5\n',
            encoding="utf-8",
        )
        refused = cli("serve", "--config", str(config), "--port", str(free_port()), timeout=60)
    finally:
        holder.close()
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        f"error: cannot start: the task database {database} is locked by another program's"
        " write transaction (waited [server] sqlite_busy_timeout_seconds, 0.5 s); end that"
        " transaction (a sqlite3 shell, a backup tool) and start again"
    )
