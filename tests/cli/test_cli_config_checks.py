"""The ``serve`` configuration checks: ranges at their lines, all problems at once, non-finite
numbers, a byte order mark, media types, executors that fail to import; the page-token key."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import cli, write_config

from a2a_wire.cli._app import build_store
from a2a_wire.cli.config import ConfigError, load

RANGES = """[server]
keepalive_seconds = nan
shutdown_grace_seconds = inf

[limits]
max_batch_size = 0
stream_queue_size = 0
cancel_grace_seconds = -inf
card_max_age_seconds = 0

[push]
max_attempts = 0
backoff_base_seconds = 10
backoff_cap_seconds = 5
"""


def test_range_errors_keep_their_lines_and_all_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "ranges.toml"
    path.write_text(RANGES, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).splitlines() == [
        f"{path}:2: server.keepalive_seconds: must be a finite number, not nan",
        f"{path}:3: server.shutdown_grace_seconds: must be a finite number, not inf",
        f"{path}:6: limits.max_batch_size: must be positive, not 0",
        f"{path}:7: limits.stream_queue_size: must be positive, not 0",
        f"{path}:8: limits.cancel_grace_seconds: must be a finite number, not -inf",
        f"{path}:12: push.max_attempts: must be positive, not 0",
        f"{path}:13: push.backoff_base_seconds: "
        "backoff_cap_seconds must not be below backoff_base_seconds",
    ]


def test_a_value_below_a_default_is_judged_beside_the_values_given(tmp_path: Path) -> None:
    path = tmp_path / "backoff.toml"
    path.write_text(
        "[push]\nbackoff_base_seconds = 0.05\nbackoff_cap_seconds = 0.2\n", encoding="utf-8"
    )
    push = load(path).settings.push
    assert (push.backoff_base_seconds, push.backoff_cap_seconds) == (0.05, 0.2)
    path.write_text(
        "[push]\nmax_attempts = 0\nbackoff_base_seconds = 0.05\nbackoff_cap_seconds = 0.2\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).splitlines() == [f"{path}:2: push.max_attempts: must be positive, not 0"]


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_text("\ufeff[server]\nport = 9001\n", encoding="utf-8")
    assert load(path).server.port == 9001
    path.write_text("\ufeff[server]\nport = 9001\ncolour = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value) == f"{path}:3: server.colour: unknown key"


def test_media_types_of_modes_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "modes.toml"
    good = ["text/plain", "image/*", "*/*", "text/plain; charset=utf-8", "application/vnd.a+json"]
    path.write_text(
        f"[card]\ndefault_input_modes = {good!r}\ndefault_output_modes = ['text', '/json']\n"
        "\n[[skills]]\nexecutor = 'echo'\ninput_modes = ['text/plain', 'a b/c', '*/plain']\n"
        "output_modes = ['text/plain;q']\n".replace("'", '"'),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).splitlines() == [
        f"{path}:3: card.default_output_modes: 'text' is not a media type type/subtype "
        "(e.g. text/plain)",
        f"{path}:3: card.default_output_modes: '/json' is not a media type type/subtype "
        "(e.g. text/plain)",
        f"{path}:7: skills[0].input_modes: 'a b/c' is not a media type type/subtype "
        "(e.g. text/plain)",
        f"{path}:7: skills[0].input_modes: '*/plain' is not a media type type/subtype "
        "(e.g. text/plain)",
        f"{path}:8: skills[0].output_modes: 'text/plain;q' is not a media type type/subtype "
        "(e.g. text/plain)",
    ]
    path.write_text(f"[card]\ndefault_input_modes = {good!r}\n".replace("'", '"'))
    assert load(path).card.default_input_modes == tuple(good)


# Modules that fail in every way a user's module can; each name is unique to this test file.
_BROKEN = {
    "broken_syntax_15": ("x = 1\ndef f(:\n", "SyntaxError: invalid syntax", 2),
    "broken_raises_15": ("x = 1\nraise RuntimeError('no database')\n", "RuntimeError", 2),
    "broken_env_15": (
        "import os\n\nKEY = os.environ['BROKEN_ENV_15_UNSET']\n",
        "KeyError: 'BROKEN_ENV_15_UNSET'",
        3,
    ),
    "broken_exit_15": ("import sys\nsys.exit(3)\n", "SystemExit: 3", 2),
}


def test_an_executor_module_that_fails_to_import_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    config = ""
    for name, (source, _, _) in _BROKEN.items():
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        config += f'[[skills]]\nid = "{name}"\nexecutor = "{name}:Agent"\n\n'
    (tmp_path / "broken_init_15.py").write_text(
        "import os\n\n\nclass Agent:\n    def __init__(self):\n"
        "        self.key = os.environ['BROKEN_INIT_15_UNSET']\n",
        encoding="utf-8",
    )
    config += '[[skills]]\nid = "init"\nexecutor = "broken_init_15:Agent"\n'
    path = write_config(tmp_path / "serve.toml", config)
    result = cli("serve", "--config", str(path), "--check")
    assert result.returncode == 6, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: invalid configuration {path}"
    assert len(lines) == 1 + len(_BROKEN) + 1
    for index, (name, (_, what, line)) in enumerate(_BROKEN.items()):
        where = f"{tmp_path / name}.py:{line}"
        assert lines[1 + index].startswith(
            f"  {path}:{3 + 4 * index}: skills[{index}].executor: cannot load '{name}:Agent': "
        ), lines
        assert what in lines[1 + index] and lines[1 + index].endswith(f" at {where}"), lines
    assert lines[-1] == (
        f"  {path}:19: skills[4].executor: 'broken_init_15:Agent' could not be built: "
        f"KeyError: 'BROKEN_INIT_15_UNSET' at {tmp_path / 'broken_init_15.py'}:6"
    )
    assert "Traceback" not in result.stderr


def test_page_token_key_is_owner_only_when_made_and_when_replaced(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = load(None, data_dir=str(data))
    build_store(config)
    key_file = data / "page-token.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    made = key_file.read_bytes()
    assert len(made) == 32
    build_store(config)
    assert key_file.read_bytes() == made  # kept across starts
    key_file.write_bytes(b"short")  # unusable: replaced at the next start
    key_file.chmod(0o644)
    build_store(config)
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_bytes()) == 32 and key_file.read_bytes() != made
    assert sorted(p.name for p in data.iterdir()) == ["page-token.key"]  # no spare file left
