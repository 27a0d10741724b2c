"""A malformed agent URL is a usage error (exit 2) with a one-line message, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from a2a_wire.cli import cli


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:99999", "http://127.0.0.1:abc", "http://[::1", "ftp://x", "notaurl"],
)
def test_bad_urls_are_usage_errors(url: str) -> None:
    outcome = CliRunner().invoke(cli, ["send", url, "hi"])
    assert outcome.exit_code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert "URL" in outcome.output
