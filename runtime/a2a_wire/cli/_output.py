"""How the client commands show things: human-readable with rich, or ProtoJSON lines.

Human output goes to stdout. The live progress line (a spinner with the task state, the number
of events and the time spent) is drawn only when stdout and stderr are both a terminal, and is
erased when the command ends, so pipes and files get clean text. Everything an agent sent is stripped of terminal control characters
before it is shown, and printed as plain text (never as rich markup). ``--json`` writes each
value with the ProtoJSON codec, one object per line, and nothing else to stdout.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import shlex
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from a2a_wire import codec
from a2a_wire._protocol.states import state_word
from a2a_wire.cli._view import TaskView
from a2a_wire.client import Resubscription, safe_url
from a2a_wire.codec import UNSET
from a2a_wire.types import (
    AgentCard,
    Artifact,
    ListTasksResponse,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    Timestamp,
)

__all__ = [
    "Printer",
    "answer_command",
    "clean",
    "count",
    "progress_line",
    "state_name",
    "state_names_in",
]

_PIPE_WIDTH = 160
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_STYLES = {
    TaskState.COMPLETED: "green",
    TaskState.FAILED: "red",
    TaskState.REJECTED: "red",
    TaskState.CANCELED: "yellow",
    TaskState.INPUT_REQUIRED: "magenta",
    TaskState.AUTH_REQUIRED: "magenta",
}


def clean(text: str) -> str:
    """``text`` without terminal control characters (newlines and tabs are kept)."""
    return _CONTROL.sub("", text)


def count(number: int, noun: str) -> str:
    """``1 task``, ``2 tasks``, ``0 tasks``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


_STATE_VALUE = re.compile(r"\bTASK_STATE_([A-Z_]+)\b")


def state_names_in(text: str) -> str:
    """``text`` with each ``TASK_STATE_CANCELED`` written as the CLI shows it (``canceled``)."""
    return _STATE_VALUE.sub(lambda m: m.group(1).lower().replace("_", "-"), text)


def state_name(state: TaskState | None) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` as ``input-required``; an unknown value as it is."""
    return clean(state_word(state))


def _state_text(state: TaskState | None) -> Text:
    style = _STYLES.get(state, "cyan") if state is not None else ""
    return Text(state_name(state), style=style)


def _when(stamp: Timestamp | None) -> str:
    if stamp is None:
        return ""
    moment = datetime.datetime.fromtimestamp(stamp.seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _part(part: Part) -> RenderableType:
    if part.text is not None:
        return Text(clean(part.text))
    if part.data is not UNSET:
        return JSON(codec.dumps(part.data).decode())
    name = clean(part.filename) or "file"
    media = clean(part.media_type) or "unknown type"
    if part.raw is not None:
        return Text(f"[file] {name} ({media}, {len(part.raw)} bytes)", style="dim")
    return Text(f"[file] {name} ({media}) at {clean(part.url or '')}", style="dim")


def _inline(parts: Sequence[Part]) -> str:
    """Parts on one line: text as it is, data as compact JSON, files by name."""
    out = []
    for part in parts:
        if part.text is not None:
            out.append(clean(part.text))
        elif part.data is not UNSET:
            out.append(clean(codec.dumps(part.data).decode()))
        else:
            out.append(f"[file {clean(part.filename) or clean(part.url or '') or '?'}]")
    return " ".join(out)


def _parts(parts: Sequence[Part]) -> list[RenderableType]:
    """Parts one below the other; consecutive text parts (stream chunks) run together."""
    out: list[RenderableType] = []
    text: list[str] = []
    for part in parts:
        if part.text is not None:
            text.append(clean(part.text))
            continue
        if text:
            out.append(Text("".join(text)))
            text = []
        out.append(_part(part))
    if text:
        out.append(Text("".join(text)))
    return out


def _artifact(artifact: Artifact) -> list[RenderableType]:
    title = clean(artifact.name or artifact.artifact_id)
    return [Text(f"── {title} ──", style="bold dim"), *_parts(artifact.parts)]


def _message(message: Message) -> RenderableType:
    role = "agent" if message.role.value.endswith("AGENT") else "user"
    return Group(Text(f"{role}:", style="bold"), *_parts(message.parts))


def _fields(rows: Sequence[tuple[str, str | Text]]) -> Text:
    """``label  value`` lines, values aligned, none padded (a grid pads each to the longest)."""
    width = max((len(label) for label, _ in rows), default=0) + 2
    out = Text()
    for n, (label, value) in enumerate(rows):
        text = value if isinstance(value, Text) else Text(clean(value))
        if n:
            out.append("\n")
        out.append(label if not text.plain else label.ljust(width), style="bold")
        for i, line in enumerate(text.split("\n", allow_blank=True)):
            out.append("\n" + " " * width if i else "")
            out.append_text(line)
    return out


def task_renderable(task: Task, *, history: bool = False) -> RenderableType:
    """A task: ids, state, status message, artifacts and (optionally) history."""
    status = task.status
    rows: list[tuple[str, str | Text]] = [
        ("task", task.id),
        ("context", task.context_id),
        ("state", _state_text(status.state if status is not None else None)),
    ]
    if status is not None and status.message is not None:
        rows.append(("status", _inline(status.message.parts)))
    if status is not None and status.timestamp is not None:
        rows.append(("updated", _when(status.timestamp)))
    items: list[RenderableType] = [_fields(rows)]
    for artifact in task.artifacts:
        items.extend(_artifact(artifact))
    if history and task.history:
        items.append(Text("── history ──", style="bold dim"))
        items.extend(_message(m) for m in task.history)
    return Group(*items)


def event_line(event: StreamResponse) -> Text:
    """One stream event as one line of text."""
    if event.message is not None:
        return Text(f"message   {_inline(event.message.parts)}")
    if event.task is not None:
        task = event.task
        status = task.status
        line = Text(f"task      {clean(task.id)}  context {clean(task.context_id)}  ")
        line.append_text(_state_text(status.state if status is not None else None))
        if status is not None and status.message is not None:  # a question, when it asks
            line.append(" " + _inline(status.message.parts))
        return line
    if event.status_update is not None:
        status = event.status_update.status
        state = status.state if status is not None else None
        line = _state_text(state)
        if status is not None and status.message is not None:
            line.pad_right(max(1, 10 - len(line.plain)))  # a column, or one space past it
            line.append(_inline(status.message.parts))
        return line
    update = event.artifact_update
    if update is not None and update.artifact is not None:
        name = clean(update.artifact.name or update.artifact.artifact_id)
        joiner = "+=" if update.append else "="
        return Text(f"artifact  {name} {joiner} {_inline(update.artifact.parts)}")
    return Text("(empty event)", style="dim")


def progress_line(view: TaskView, spent: float) -> str:
    """The live line of a stream: the state (once known), the events so far, the time spent."""
    if view.events == 0:
        return f"waiting for the agent · {spent:.1f}s"
    what = state_name(view.state) if view.state is not None else "answered"
    return f"{what} · {count(view.events, 'event')} · {spent:.1f}s"


_NEEDS = {
    TaskState.INPUT_REQUIRED: "the agent needs input",
    TaskState.AUTH_REQUIRED: "the agent needs authentication",
}


def answer_command(url: str, task_id: str) -> str:
    """The command that answers an interrupted task: ``a2a-wire send URL TEXT --task-id ID``."""
    return f"a2a-wire send {shlex.quote(safe_url(url))} TEXT --task-id {shlex.quote(task_id)}"


class Printer:
    """Writes a command's results, human-readable or as ProtoJSON lines.

    Args:
        json_output: Write ProtoJSON lines instead of text.
    """

    def __init__(self, json_output: bool) -> None:
        self.json = json_output
        self.out = Console(highlight=False, soft_wrap=True)
        if not self.out.is_terminal:
            self.out.width = _PIPE_WIDTH  # whole ids in tables when the output is a file or pipe
        self.err = Console(stderr=True, highlight=False)

    def value(self, value: Any) -> None:
        """Write one ProtoJSON object (a message class, or a plain dict) as a line."""
        obj = value if isinstance(value, dict) else value.to_dict()
        sys.stdout.write(codec.dumps(obj).decode() + "\n")
        sys.stdout.flush()

    def show(self, renderable: RenderableType) -> None:
        """Write a human-readable renderable."""
        self.out.print(renderable)

    def task(self, task: Task, *, history: bool = False) -> None:
        """Write a task."""
        if self.json:
            self.value(task)
        else:
            self.show(task_renderable(task, history=history))

    def message(self, message: Message) -> None:
        """Write a direct reply (text output; ``--json`` writes the whole response)."""
        self.show(_message(message))

    def resuming(self, notice: Resubscription) -> None:
        """Say on stderr that a stream re-subscribes (one line; one JSON object with ``--json``)."""
        if self.json:
            line = {
                "resubscribing": {
                    "taskId": notice.task_id,
                    "attempt": notice.attempt,
                    "limit": notice.limit,
                    "pauseSeconds": notice.pause,
                    "lastEventId": notice.last_event_id,
                    "line": str(notice),
                }
            }
            _stderr_json(line)
            return
        self.err.print(Text(state_names_in(clean(str(notice)))), soft_wrap=True)

    def _live(self) -> bool:
        return not self.json and self.out.is_terminal and self.err.is_terminal

    @contextlib.contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        """A spinner with ``what`` and the time spent, while the block runs (terminal only)."""
        if not self._live():
            yield
            return
        start = time.monotonic()

        def line() -> RenderableType:
            return Spinner("dots", Text(f"{what} · {time.monotonic() - start:.1f}s"))

        with Live(console=self.out, transient=True, get_renderable=line, refresh_per_second=10):
            yield

    @contextlib.contextmanager
    def streaming(self, view: TaskView) -> Iterator[None]:
        """The live progress line of a stream: state, events so far, time spent."""
        if not self._live():
            yield
            return
        start = time.monotonic()

        def line() -> RenderableType:
            return Spinner("dots", Text(progress_line(view, time.monotonic() - start)))

        with Live(console=self.out, transient=True, get_renderable=line, refresh_per_second=10):
            yield

    def event(self, event: StreamResponse) -> None:
        """Write one stream event."""
        if self.json:
            self.value(event)
        else:
            self.out.print(event_line(event))

    def stream_result(self, view: TaskView) -> None:
        """After a stream (text output only): the artifacts as assembled from their chunks."""
        if self.json or view.task is None or not view.task.artifacts:
            return
        self.out.print()
        for artifact in view.task.artifacts:
            for item in _artifact(artifact):
                self.out.print(item)

    def card(self, card: AgentCard) -> None:
        """Write an agent card."""
        if self.json:
            self.value(card)
            return
        caps = card.capabilities
        yes = {True: "yes", False: "no", None: "no"}
        rows: list[tuple[str, str | Text]] = [
            ("name", card.name),
            ("description", card.description),
            ("version", card.version),
        ]
        if card.provider is not None:
            rows.append(("provider", f"{card.provider.organization} {card.provider.url}".strip()))
        for iface in card.supported_interfaces:
            binding = f"{iface.protocol_binding} {iface.protocol_version}"
            rows.append(("interface", f"{binding} {iface.url}"))
        if caps is not None:
            rows.append(("streaming", yes[caps.streaming]))
            rows.append(("push", yes[caps.push_notifications]))
            rows.append(("extended card", yes[caps.extended_agent_card]))
            for ext in caps.extensions:
                rows.append(("extension", ext.uri + (" (required)" if ext.required else "")))
        if card.security_schemes:
            rows.append(("security", ", ".join(sorted(card.security_schemes))))
        skills = Table("skill", "name", "description", "tags", show_edge=False)
        for skill in card.skills:
            skills.add_row(
                *(Text(clean(v)) for v in (skill.id, skill.name, skill.description)),
                Text(clean(", ".join(skill.tags))),
            )
        self.show(Group(_fields(rows), skills))

    def task_list(self, page: ListTasksResponse) -> None:
        """Write one page of ListTasks."""
        if self.json:
            self.value(page)
            return
        more = f"; next page: --page-token {page.next_page_token}" if page.next_page_token else ""
        if not page.tasks:
            self.show(Text(f"no tasks{more}", style="dim"))
            return
        table = Table("task", "state", "updated", "context", show_edge=False)
        for task in page.tasks:
            status = task.status
            table.add_row(
                Text(clean(task.id)),
                _state_text(status.state if status is not None else None),
                _when(status.timestamp if status is not None else None),
                Text(clean(task.context_id)),
            )
        summary = f"{len(page.tasks)} of {count(page.total_size, 'task')}{more}"
        self.show(Group(table, Text(summary, style="dim")))

    def push_config(self, config: TaskPushNotificationConfig) -> None:
        """Write one push notification config (the token and credentials are not shown)."""
        if self.json:
            self.value(config)
            return
        rows: list[tuple[str, str | Text]] = [
            ("config", config.id),
            ("task", config.task_id),
            ("url", config.url),
            ("token", "(set)" if config.token else "(none)"),
        ]
        if config.authentication is not None:
            rows.append(("auth", f"{config.authentication.scheme} (credentials hidden)"))
        self.show(_fields(rows))

    def still_following(self, task: Task, url: str) -> None:
        """``subscribe`` reads on after the agent's turn ended: say so on stderr, and how to answer.

        Nothing is written for a task that does not wait for the client. With ``--json`` it is
        one ``{"turnEnded": {..., "following": true}}`` object.
        """
        status = task.status
        if status is None or status.state not in _NEEDS:
            return
        command = answer_command(url, clean(task.id))
        if self.json:
            line = {
                "turnEnded": {
                    "taskId": task.id,
                    "state": status.state.value,
                    "answer": command,
                    "following": True,
                }
            }
            _stderr_json(line)
            return
        note = f"{_NEEDS[status.state]}; still following (Ctrl-C stops); answer with: {command}"
        self.err.print(Text(note), soft_wrap=True)

    def turn_over(self, task: Task, url: str) -> None:
        """If ``task`` waits for the client, say so on stderr: the question, the task, the answer.

        Nothing is written for a task in another state. With ``--json`` it is one
        ``{"turnEnded": {...}}`` object.
        """
        status = task.status
        if status is None or status.state not in _NEEDS:
            return
        question = _inline(status.message.parts) if status.message is not None else ""
        task_id = clean(task.id)
        command = answer_command(url, task_id)
        if self.json:
            line = {
                "turnEnded": {
                    "taskId": task.id,
                    "state": status.state.value,
                    "question": question,
                    "answer": command,
                }
            }
            _stderr_json(line)
            return
        what = _NEEDS[status.state]
        asks = f": {question}" if question else ""
        self.err.print(Text(f"{what}{asks}"), soft_wrap=True)
        self.err.print(Text(f"task {task_id}; answer with: {command}"), soft_wrap=True)


def _stderr_json(line: Mapping[str, object]) -> None:
    """Write ``line`` as one JSON object on its own line of stderr (``--json``'s notices)."""
    sys.stderr.write(codec.dumps(line).decode() + "\n")
    sys.stderr.flush()
