"""The interop table: the cells the interop tests fill, and how docs/interop.md is rendered.

Each test records the outcome of its cell with :meth:`InteropTable.record` in the session's
table (the ``interop_table`` fixture of ``conftest.py``). ``test_table.py`` runs last: it renders
the table once every cell of :data:`SECTIONS` has an outcome and compares it with the committed
``docs/interop.md``; ``make interop-table`` runs the same tests with ``--write-interop-table`` to
write the file instead. Outcomes are plain sentences without ids, ports or times, and rows keep
the order declared here, so the file only changes when behaviour changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SDK = "a2a-sdk 1.3.0"
OURS = "a2a-wire"


@dataclass(frozen=True)
class Section:
    """One table of the document."""

    key: str
    title: str
    intro: str
    row_header: str
    columns: tuple[str, ...]
    rows: tuple[str, ...]


OPERATIONS = (
    "Agent card: card resolver, then client factory",
    "SendMessage, blocking",
    "SendMessage, returnImmediately",
    "SendMessage answered with a Message",
    "SendStreamingMessage (artifact in two chunks)",
    "GetTask, historyLength unset, 0, 1, 2, 3, 10",
    "ListTasks, pageSize 2 with page tokens; includeArtifacts with historyLength 1",
    "CancelTask, then CancelTask again",
    "SubscribeToTask",
    "GetTask of an unknown task",
    "Push-config methods: Create, Get, List, Delete",
    "GetExtendedAgentCard",
    "OAuth 2.0 client credentials: a token from a loopback authorization server",
)

TURNS = (
    f"{OURS} client, blocking",
    f"{OURS} client, streamed (follow-up streams begin with a status update)",
    "`a2a-wire send --task-id`",
    "`a2a-wire send --stream --task-id`",
    "`a2a-wire subscribe --turn` after the first question; `a2a-wire subscribe` from there on",
)
"""How the a2a-wire side holds a conversation with the SDK's server (rows of ``sdk-turns``)."""

ASKED = {  # conversation -> the column of its outcomes
    "input-first": "Name, then sign-in: INPUT_REQUIRED, AUTH_REQUIRED, COMPLETED",
    "auth-first": "Sign-in twice: AUTH_REQUIRED, AUTH_REQUIRED, COMPLETED",
    "ask-input": "INPUT_REQUIRED, INPUT_REQUIRED, COMPLETED",
    "ask-auth": "AUTH_REQUIRED, AUTH_REQUIRED, COMPLETED",
}

SDK_TURNS = (
    f"{SDK} client, blocking (`streaming=False`)",
    f"{SDK} client, streamed (`streaming=True`)",
    f"{SDK} client, SubscribeToTask after the first question, then the answer sent blocking",
)
"""How the SDK's client holds a conversation with our server (rows of ``sdk-client-turns``)."""

READING = (
    "Task with fields the proto lacks (v1.1-style `generation`, `status.progressHint`)",
    "SUBMITTED status without timestamp",
    "Part of an unknown kind",
    "Unknown task state",
    "Stream event with an unknown member",
)

SECTIONS = (
    Section(
        "sdk-client",
        f"{SDK} client, {OURS} server",
        f"The SDK's JSON-RPC client is built from the card {OURS} serves (`A2ACardResolver`, "
        "then `ClientFactory`). Every result the SDK parses is compared with what the "
        f"{OURS} server stored.",
        "Operation",
        ("Outcome",),
        OPERATIONS,
    ),
    Section(
        "sdk-server",
        f"{OURS} client, {SDK} server",
        f"The SDK's JSON-RPC server (its Starlette routes under uvicorn on 127.0.0.1, with "
        f"`DefaultRequestHandler` and an executor of the SDK's kind) is driven by the {OURS} "
        "client. Every result our client parses is compared with what the SDK's task store holds.",
        "Operation",
        ("Outcome",),
        OPERATIONS,
    ),
    Section(
        "sdk-client-turns",
        f"Conversations: {SDK} client, {OURS} server",
        f"The {OURS} agent asks twice (for the user's name, or for a sign-in), then answers with "
        "an artifact. The SDK's client holds each conversation of three turns, each follow-up "
        "naming the task and its context; every Task the SDK parses, and every stream replayed, "
        f"is compared with what the {OURS} server stored when the turn ended.",
        "Conversation held by",
        (ASKED["ask-input"], ASKED["ask-auth"]),
        SDK_TURNS,
    ),
    Section(
        "sdk-turns",
        f"Conversations: {OURS} client, {SDK} server",
        f"An executor of the SDK's kind asks twice, then answers; the first question opens the "
        "task. As the SDK's executors do, its follow-up turns enqueue status and artifact "
        "updates only, and the SDK server streams them without the Task that spec 3.1.2 puts "
        f"first. The {OURS} client reads such a stream with one warning "
        "(docs/prose-and-proto.md, row 51).",
        "Conversation held by",
        (ASKED["input-first"], ASKED["auth-first"]),
        TURNS,
    ),
    Section(
        "reading",
        "Reading what the proto does not define",
        "A scripted server answers GetTask (and one stream) with each input below; both clients "
        "read it. Neither result is an error unless the cell says so.",
        "Input",
        (f"{OURS} client", f"{SDK} client"),
        READING,
    ),
    Section(
        "version",
        "A request without `A2A-Version`",
        "Spec 3.6.2 reads a missing version as 0.3; both servers speak only 1.0.",
        "Request",
        (f"{OURS} server", f"{SDK} server"),
        ("GetTask without the header", "SendStreamingMessage without the header"),
    ),
)

HEADER = """# Interop with the a2a-sdk

<!-- Written by `make interop-table` from the interop tests (tests/interop/); do not edit. -->

a2a-wire is checked against the reference Python SDK, `a2a-sdk` 1.3.0 (import name `a2a`), in
both directions. The SDK is a test-only dependency; its scenarios run in subprocesses
(tests/interop/run_*.py) because it registers the same `a2a.proto` in protobuf's descriptor
pool as the codec oracle does. Each cell below is written by the test that checks it.
"""


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


@dataclass
class InteropTable:
    """Collects cell outcomes during a test session."""

    cells: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def record(self, section: str, row: str, outcome: str, column: str = "") -> None:
        """Record the outcome of one cell.

        Raises:
            KeyError: the section, row or column is not declared in :data:`SECTIONS`.
        """
        declared = {s.key: s for s in SECTIONS}[section]
        column = column or declared.columns[0]
        if row not in declared.rows or column not in declared.columns:
            raise KeyError(f"undeclared interop cell {section!r} / {row!r} / {column!r}")
        self.cells[(section, row, column)] = outcome

    def missing(self) -> list[tuple[str, str, str]]:
        """The declared cells without an outcome."""
        return [
            (s.key, row, column)
            for s in SECTIONS
            for row in s.rows
            for column in s.columns
            if (s.key, row, column) not in self.cells
        ]

    def render(self) -> str:
        """The Markdown document."""
        lines = [HEADER]
        for s in SECTIONS:
            lines += [f"## {s.title}", "", s.intro, ""]
            lines.append("| " + " | ".join((s.row_header, *s.columns)) + " |")
            lines.append("|" + "---|" * (len(s.columns) + 1))
            for row in s.rows:
                values = [self.cells.get((s.key, row, c), "not run") for c in s.columns]
                lines.append("| " + " | ".join(_escape(v) for v in (row, *values)) + " |")
            lines.append("")
        return "\n".join(lines)
