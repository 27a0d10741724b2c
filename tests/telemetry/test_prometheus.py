"""``a2a-wire serve`` with ``[telemetry] prometheus_port``: a scraper on loopback finds the a2a
metrics, the endpoint stops with serve, and a port already taken is a clear start error.

serve runs as a subprocess (it sets the process's global providers, which a test process must
not); the scrapes are plain HTTP GETs over 127.0.0.1, as Prometheus makes them.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from e2e_support import ServerProcess, cli, environment, write_config
from ports import free_port

from a2a_wire.cli._workers import refusal
from a2a_wire.cli.config import load

CONFIG = """\
[server]
port = {port}
storage = "memory"
shutdown_grace_seconds = 2

[telemetry]
prometheus_port = {scrape_port}
"""


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode())


def _config(tmp_path: Path, port: int, scrape_port: int) -> Path:
    path = tmp_path / "serve.toml"
    return write_config(path, CONFIG, port=port, scrape_port=scrape_port)


def test_a_scrape_finds_the_a2a_metrics_until_serve_stops(tmp_path: Path) -> None:
    port, scrape_port = free_port(), free_port()
    config = _config(tmp_path, port, scrape_port)
    server = ServerProcess(["--config", str(config)], tmp_path / "serve.log", port, environment())
    try:
        server.start()
        sent = cli("send", "--allow-private", server.url, "hello")
        assert sent.returncode == 0, sent.stderr
        page = _scrape(scrape_port)
        assert "a2a_server_request_duration_seconds_count" in page, page
        assert 'a2a_method_name="SendMessage"' in page
        assert "a2a_server_store_duration_seconds_bucket" in page
        assert "a2a_server_task_created" in page
        code = server.stop(timeout=60.0)
    finally:
        server.close()
    assert code == 0, server.log()
    assert "Traceback" not in server.log()
    with pytest.raises(urllib.error.URLError):  # the endpoint stopped with serve
        _scrape(scrape_port)


def test_a_scrape_port_in_use_is_a_clear_start_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        config = _config(tmp_path, free_port(), taken.getsockname()[1])
        started = cli("serve", "--config", str(config), timeout=60.0)
    assert started.returncode == 1
    assert "cannot listen for Prometheus scrapes on 127.0.0.1:" in started.stderr
    assert "prometheus_port" in started.stderr
    assert "Traceback" not in started.stderr


def test_a_scrape_port_alone_sets_up_metrics_for_one_process(tmp_path: Path) -> None:
    config = load(_config(tmp_path, 8080, 9464))
    assert (config.telemetry.prometheus_port, config.telemetry.prometheus_host) == (
        9464,
        "127.0.0.1",
    )
    assert config.telemetry.active and not config.telemetry.enabled  # scrapes, no OTLP export
    assert "prometheus_port" in (refusal(config, 2) or "")  # one port, several workers
    assert refusal(config, 1) is None
