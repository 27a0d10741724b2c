"""The client commands: ``card``, ``send``, ``get``, ``list``, ``cancel``, ``subscribe``.

Each reads the agent card at the URL given (spec 8.2), picks its JSON-RPC 1.0 interface
(spec 8.3.2) and calls one operation of spec 3.1. See :mod:`a2a_wire.cli._common` for the
options they share and the exit codes.
"""

from __future__ import annotations

import datetime
import json
import mimetypes
import sys
from pathlib import Path
from typing import Any

import click

from a2a_wire._protocol.ids import new_uuid
from a2a_wire._protocol.states import is_settled
from a2a_wire._protocol.wire import SKILL_ID_KEY
from a2a_wire.cli._common import (
    EXIT_NEEDS_AUTH,
    EXIT_NEEDS_INPUT,
    EXIT_TASK_FAILED,
    EXIT_TASK_UNSETTLED,
    ClientOptions,
    client_command,
    client_options,
    print_error,
    remember_task,
)
from a2a_wire.cli._output import Printer
from a2a_wire.cli._view import TaskView
from a2a_wire.client import A2AClient, EventStream
from a2a_wire.errors import ProtocolError
from a2a_wire.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
    Timestamp,
)

__all__ = ["cancel", "card", "get", "list_tasks", "send", "subscribe"]

_FAILED = frozenset({TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED})
_NEEDS = {TaskState.INPUT_REQUIRED: EXIT_NEEDS_INPUT, TaskState.AUTH_REQUIRED: EXIT_NEEDS_AUTH}
_STATE_NAMES = {s.value.removeprefix("TASK_STATE_").lower().replace("_", "-"): s for s in TaskState}


def _outcome(state: TaskState | None, *, waited: bool = True) -> int:
    """The exit code for a task last seen in ``state`` (see the table in ``_common``).

    Args:
        state: The task's state; ``None`` when it has none.
        waited: Whether the command waited for the task to settle (not ``--no-wait``). A
            blocking call returns once the task is terminal or interrupted (spec 3.1.1); a task
            still SUBMITTED or WORKING then (the server stopped mid-task), or in a state this
            client does not know, is not a success.
    """
    if state in _FAILED:
        return EXIT_TASK_FAILED
    if state is not None and state in _NEEDS:  # the end of the agent's turn (spec 11.7)
        return _NEEDS[state]
    if state == TaskState.COMPLETED or not waited:
        return 0
    return EXIT_TASK_UNSETTLED


def _json_value(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint=option) from None


def _file_part(path: Path) -> Part:
    media, _ = mimetypes.guess_type(path.name)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {path}: {exc.strerror}", param_hint="--file"
        ) from None
    return Part(raw=raw, filename=path.name, media_type=media or "application/octet-stream")


def _request(
    text: str,
    *,
    context_id: str | None,
    task_id: str | None,
    data: tuple[str, ...],
    files: tuple[Path, ...],
    skill: str | None,
    metadata: str | None,
    no_wait: bool,
    history: int | None,
) -> SendMessageRequest:
    parts = [Part(text=text), *(Part(data=_json_value(d, "--data")) for d in data)]
    parts.extend(_file_part(path) for path in files)
    meta: dict[str, Any] = {}
    if metadata:
        value = _json_value(metadata, "--metadata")
        if not isinstance(value, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--metadata")
        meta.update(value)
    if skill:
        meta[SKILL_ID_KEY] = skill
    message = Message(
        message_id=new_uuid(),
        role=Role.USER,
        parts=parts,
        context_id=context_id or "",
        task_id=task_id or "",
        metadata=meta or None,
    )
    config = None
    if no_wait or history is not None:
        config = SendMessageConfiguration(return_immediately=no_wait, history_length=history)
    return SendMessageRequest(message=message, configuration=config)


async def _follow(
    printer: Printer, client: A2AClient, stream: EventStream, url: str, *, end_of_turn: bool
) -> int:
    """Print a stream's events and the assembled result; a re-subscription says so on stderr.

    With ``end_of_turn`` the stream ends at an interrupted state even if the agent keeps it open.
    """
    view = TaskView()
    events = client.resumable(stream, on_resume=printer.resuming, end_of_turn=end_of_turn)
    try:
        with printer.streaming(view):
            async with events:
                async for event in events:
                    before = view.state
                    view.apply(event)
                    remember_task(events.task_id)
                    printer.event(event)
                    if not end_of_turn and view.task is not None and view.state != before:
                        printer.still_following(view.task, url)
    except ProtocolError as exc:  # an error event that ended the stream before the task settled
        settled = view.state is not None and is_settled(view.state)
        if view.task is None or view.message is not None or settled:
            raise
        print_error(exc, printer.json, url, view.task.id)
        return EXIT_TASK_UNSETTLED
    if view.task is not None and not view.whole:  # updates only: the task whole for the print
        view.task = await client.get_task(view.task.id)
    printer.stream_result(view)
    if view.message is not None:
        return 0
    if view.task is not None:
        printer.turn_over(view.task, url)
    return _outcome(view.state)


@click.command()
@click.argument("url")
@click.option("--extended", is_flag=True, help="Fetch the extended card (needs a credential).")
@client_options
@client_command
async def card(url: str, extended: bool, opts: ClientOptions) -> int:
    """Show the agent card published at URL."""
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        found = await client.get_extended_agent_card() if extended else client.card
    assert found is not None
    printer.card(found)
    return 0


def _text(text: str | None, text_file: Path | None) -> str:
    """The message text: TEXT, standard input for ``-``, or the content of ``--text-file``."""
    if text is not None and text_file is not None:
        raise click.UsageError("give TEXT or --text-file, not both")
    if text is None and text_file is None:
        raise click.UsageError("missing TEXT (or - to read standard input, or --text-file FILE)")
    if text is not None and text != "-":
        return text
    source = text_file if text_file is not None and str(text_file) != "-" else None
    where = str(source) if source is not None else "standard input"
    try:
        raw = source.read_bytes() if source else sys.stdin.buffer.read()
        return raw.decode("utf-8")
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {where}: {exc.strerror}", param_hint="TEXT"
        ) from None
    except UnicodeDecodeError as exc:
        raise click.BadParameter(
            f"{where} is not UTF-8 text: {exc.reason}", param_hint="TEXT"
        ) from None


@click.command()
@click.argument("url")
@click.argument("text", required=False)
@click.option(
    "--text-file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="Read the text from this file instead of TEXT ('-': standard input).",
)
@click.option("--context-id", help="Continue this conversation.")
@click.option("--task-id", help="Continue this task (e.g. one waiting for input).")
@click.option("--stream", is_flag=True, help="Stream the task's events as they happen.")
@click.option("--no-wait", is_flag=True, help="Return once the task exists (returnImmediately).")
@click.option("--data", multiple=True, metavar="JSON", help="Add a data part (repeatable).")
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Add a file part (repeatable).",
)
@click.option("--skill", help="The skill to use (message metadata skillId).")
@click.option("--metadata", metavar="JSON", help="Message metadata, a JSON object.")
@click.option("--history", type=click.IntRange(min=0), help="History messages to return.")
@client_options
@client_command
async def send(
    url: str,
    text: str | None,
    text_file: Path | None,
    context_id: str | None,
    task_id: str | None,
    stream: bool,
    no_wait: bool,
    data: tuple[str, ...],
    files: tuple[Path, ...],
    skill: str | None,
    metadata: str | None,
    history: int | None,
    opts: ClientOptions,
) -> int:
    """Send TEXT to the agent at URL and show the answer.

    TEXT ``-`` reads the text from standard input (for long texts: a command-line argument is
    limited to 128 KiB), as does ``--text-file FILE``; the text is sent exactly as read.
    """
    if stream and no_wait:
        raise click.UsageError("--stream and --no-wait do not go together")
    request = _request(
        _text(text, text_file),
        context_id=context_id,
        task_id=task_id,
        data=data,
        files=files,
        skill=skill,
        metadata=metadata,
        no_wait=no_wait,
        history=history,
    )
    remember_task(task_id or "")
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        if stream:
            streamed = client.send_streaming_message(request)
            return await _follow(printer, client, streamed, url, end_of_turn=True)
        with printer.waiting("waiting for the agent"):
            answer = await client.send_message(request)
    if opts.json:
        printer.value(answer)
    elif answer.message is not None:
        printer.message(answer.message)
    else:
        assert answer.task is not None
        printer.task(answer.task, history=bool(history))
    if answer.task is None:
        return 0
    printer.turn_over(answer.task, url)
    status = answer.task.status
    return _outcome(status.state if status is not None else None, waited=not no_wait)


@click.command()
@click.argument("url")
@click.argument("task_id")
@click.option("--history", type=click.IntRange(min=0), help="Most recent history messages to show.")
@client_options
@client_command
async def get(url: str, task_id: str, history: int | None, opts: ClientOptions) -> int:
    """Show the task TASK_ID."""
    remember_task(task_id)
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        task = await client.get_task(GetTaskRequest(id=task_id, history_length=history))
    printer.task(task, history=bool(history))
    return 0


def _state(value: str | None) -> TaskState:
    if not value:
        return TaskState.UNSPECIFIED
    key = value.lower().removeprefix("task_state_").replace("_", "-")
    if key not in _STATE_NAMES:
        raise click.BadParameter(f"unknown state {value!r}", param_hint="--status")
    return _STATE_NAMES[key]


def _since(value: str | None) -> Timestamp | None:
    if not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            "use ISO 8601, e.g. 2025-01-31T12:00:00Z", param_hint="--since"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    micros = int(moment.timestamp() * 1_000_000)
    return Timestamp(seconds=micros // 1_000_000, nanos=(micros % 1_000_000) * 1000)


@click.command("list")
@click.argument("url")
@click.option("--context-id", help="Only tasks of this conversation.")
@click.option("--status", help="Only tasks in this state (e.g. working, completed).")
@click.option("--since", help="Only tasks whose status changed at or after this time (ISO 8601).")
@click.option("--page-size", type=click.IntRange(1, 100), help="Tasks per page (1-100).")
@click.option("--page-token", default="", help="The page to show (from the previous page).")
@click.option(
    "--history",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="History messages per task (each task's messages make the page larger).",
)
@click.option("--include-artifacts", is_flag=True, help="Include artifacts (with --json).")
@client_options
@client_command
async def list_tasks(
    url: str,
    context_id: str | None,
    status: str | None,
    since: str | None,
    page_size: int | None,
    page_token: str,
    history: int,
    include_artifacts: bool,
    opts: ClientOptions,
) -> int:
    """List the tasks of the agent at URL, newest first.

    Without ``--history`` no history is asked for (``historyLength`` 0), so that a page stays
    small whatever the tasks hold.
    """
    request = ListTasksRequest(
        context_id=context_id or "",
        status=_state(status),
        status_timestamp_after=_since(since),
        page_size=page_size,
        page_token=page_token,
        history_length=history,
        include_artifacts=True if include_artifacts else None,
    )
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        page = await client.list_tasks(request)
    printer.task_list(page)
    return 0


@click.command()
@click.argument("url")
@click.argument("task_id")
@client_options
@client_command
async def cancel(url: str, task_id: str, opts: ClientOptions) -> int:
    """Cancel the task TASK_ID and show it."""
    remember_task(task_id)
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        task = await client.cancel_task(CancelTaskRequest(id=task_id))
    printer.task(task)
    return 0


@click.command()
@click.argument("url")
@click.argument("task_id")
@click.option(
    "--turn", is_flag=True, help="Stop at the end of the agent's turn (input- or auth-required)."
)
@client_options
@client_command
async def subscribe(url: str, task_id: str, turn: bool, opts: ClientOptions) -> int:
    """Follow the events of the task TASK_ID until its stream ends.

    An agent that keeps the stream open when it asks for input or authentication is followed
    across turns, until the task ends; ``--turn`` stops at the end of the current turn. (An
    a2a-wire server ends the stream there itself.)
    """
    remember_task(task_id)
    printer = Printer(opts.json)
    async with await opts.connect(url) as client:
        stream = client.subscribe_to_task(SubscribeToTaskRequest(id=task_id))
        return await _follow(printer, client, stream, url, end_of_turn=turn)
