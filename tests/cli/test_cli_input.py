"""What the commands read from standard input: ``send``'s text, ``hash-secret``'s secret."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from e2e_support import PYTHON, cli_async, environment, fake_agent

from a2a_wire.server import verify_secret

# Longer than one command-line argument may be on Linux (MAX_ARG_STRLEN, 128 KiB).
LONG = "".join(f"line {n}: na\u00efve caf\u00e9 \u2713\n" for n in range(40_000))


async def test_send_reads_its_text_from_standard_input_or_a_file(
    aiohttp_server: Any, tmp_path: Path
) -> None:
    received: list[str] = []

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        received.append("".join(part["text"] for part in params["message"]["parts"]))
        return {
            "task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
        }

    url = str((await aiohttp_server(fake_agent(answer))).make_url("/"))
    assert len(LONG.encode()) > 1_000_000
    code, _, err = await cli_async("send", url, "-", stdin=LONG.encode())
    assert code == 0, err
    source = tmp_path / "notes.txt"
    source.write_text(LONG, encoding="utf-8")
    code, _, err = await cli_async("send", url, "--text-file", str(source))
    assert code == 0, err
    code, _, err = await cli_async("send", url, "--text-file", "-", stdin=b"piped")
    assert code == 0, err
    assert received == [LONG, LONG, "piped"]  # exactly as read


async def test_send_refuses_unclear_or_unreadable_text(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/"  # never reached: the text is refused first
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9".encode("latin-1"))
    cases = {
        ("send", url): "missing TEXT",
        ("send", url, "hi", "--text-file", str(tmp_path / "latin1.txt")): "not both",
        ("send", url, "--text-file", str(tmp_path / "latin1.txt")): "is not UTF-8 text",
        ("send", url, "--text-file", str(tmp_path / "absent.txt")): "cannot read",
    }
    for args, message in cases.items():
        code, _, err = await cli_async(*args)
        assert (code, message in err) == (2, True), err


def _hash_secret(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "a2a_wire", "hash-secret", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
    )


def test_hash_secret_reads_one_line_from_a_pipe() -> None:
    piped = _hash_secret("s3cret\nsecond line\n")
    assert piped.returncode == 0, piped.stderr
    assert verify_secret("s3cret", piped.stdout.strip())
    windows = _hash_secret(" with spaces \r\n")
    assert verify_secret(" with spaces ", windows.stdout.strip())
    unterminated = _hash_secret("no newline")
    assert verify_secret("no newline", unterminated.stdout.strip())
    for empty in ("", "\n"):
        refused = _hash_secret(empty)
        assert refused.returncode == 2 and "must not be empty" in refused.stderr
        assert "Aborted" not in refused.stderr
    flag = _hash_secret("", "--secret", "from-flag")
    assert verify_secret("from-flag", flag.stdout.strip())


def _read_until(fd: int, wanted: bytes, timeout: float = 60.0) -> bytes:
    """Read ``fd`` until ``wanted`` appears (the prompt): the answer is typed only then."""
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 1024) if ready else b""
        if not chunk:
            raise AssertionError(f"no {wanted!r} in {seen!r}")
        seen += chunk
    return seen


def test_hash_secret_asks_twice_on_a_terminal() -> None:
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [PYTHON, "-m", "a2a_wire", "hash-secret"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
        start_new_session=True,  # no controlling terminal: the prompt is on stderr, input the pty
    )
    try:
        assert proc.stderr is not None
        # Typed before the prompt, the answer would be flushed when echo is turned off.
        _read_until(proc.stderr.fileno(), b"Secret:")
        os.write(controller, b"typed\n")
        _read_until(proc.stderr.fileno(), b"confirmation:")
        os.write(controller, b"typed\n")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        os.close(controller)
        os.close(terminal)
    assert proc.returncode == 0, err
    assert verify_secret("typed", out.decode().strip())
