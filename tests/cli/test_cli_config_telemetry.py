"""``[telemetry]`` of the serve configuration: defaults, the environment, refused values, the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from a2a_wire.cli.config import ConfigError, load


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "serve.toml"
    path.write_text(text, encoding="utf-8")
    return load(path, data_dir=str(tmp_path))


def test_export_is_off_without_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert load(None).telemetry.enabled is False


def test_an_endpoint_turns_export_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    config = _load(tmp_path, '[telemetry]\nendpoint = "http://127.0.0.1:4318"\n')
    assert config.telemetry.enabled is True  # type: ignore[attr-defined]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert load(None).telemetry.enabled is True
    off = _load(tmp_path, "[telemetry]\nenabled = false\n")
    assert off.telemetry.enabled is False  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sample_ratio = 1.5", "telemetry.sample_ratio: must be 0..1, not 1.5"),
        ("sample_ratio = -0.1", "telemetry.sample_ratio: must be >= 0"),
        ('endpoint = "ftp://collector"', "telemetry.endpoint: must be an http:// or https:// URL"),
        ("export_timeout_seconds = 0", "telemetry.export_timeout_seconds: must be positive"),
        ("exporter = 'grpc'", "telemetry.exporter: unknown key"),
        ("prometheus_port = 70000", "telemetry.prometheus_port: must be 0..65535, not 70000"),
        ("prometheus_port = '9464'", "telemetry.prometheus_port: must be an integer"),
    ],
)
def test_refused_values_name_their_key(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f"[telemetry]\nenabled = false\n{text}\n")
    assert problem in str(info.value)


def test_export_without_the_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http", None)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, '[telemetry]\nendpoint = "http://127.0.0.1:4318"\n')
    text = str(info.value)
    assert "telemetry.enabled: [telemetry] enabled needs opentelemetry.exporter" in text
    assert "in the otlp extra: " in text and "pip install" in text and "[otlp]" in text


def test_a_scrape_port_without_the_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, "[telemetry]\nenabled = false\nprometheus_port = 9464\n")
    text = str(info.value)
    assert "telemetry.prometheus_port: [telemetry] prometheus_port needs" in text
    assert "in the prometheus extra: " in text and "[prometheus]" in text
