"""The skill routing rule and media-type checks of :mod:`a2a_wire.server`."""

from __future__ import annotations

from typing import Any

import pytest

from a2a_wire.errors import ContentTypeNotSupportedError, InvalidParamsError
from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    Skill,
    SkillRouter,
    SkillSet,
    media_matches,
)
from a2a_wire.types import AgentSkill, Message, Part, Role, Task


class Recorder(AgentExecutor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[str] = []

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        self.calls.append("execute")

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        self.calls.append("cancel")


def skill(skill_id: str, *, public: bool = True, default: bool = False, **modes: Any) -> Skill:
    card = AgentSkill(id=skill_id, name=skill_id.title(), description="d", tags=["t"], **modes)
    return Skill(card, Recorder(skill_id), public=public, default=default)


def msg(*parts: Part, skill_id: Any = None, role: Role = Role.USER) -> Message:
    metadata = None if skill_id is None else {"skillId": skill_id}
    return Message(
        message_id="m", role=role, parts=list(parts) or [Part(text="hi")], metadata=metadata
    )


@pytest.fixture
def skills() -> SkillSet:
    return SkillSet(
        [
            skill("echo", default=True),
            skill("image", input_modes=["image/*"], output_modes=["application/json"]),
            skill("secret", public=False),
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )


ALL = frozenset({"echo", "image", "secret"})


def test_set_rules() -> None:
    with pytest.raises(ValueError, match="^a skill set needs at least one skill$"):
        SkillSet([])
    with pytest.raises(ValueError, match="^skill id 'a' is used twice$"):
        SkillSet([skill("a"), skill("a")])
    with pytest.raises(ValueError, match="^at most one skill may be the default$"):
        SkillSet([skill("a", default=True), skill("b", default=True)])


def test_allowed_ids(skills: SkillSet) -> None:
    assert skills.allowed_ids(None, authenticated=False) == {"echo", "image"}
    assert skills.allowed_ids(frozenset({"secret", "ghost"}), True) == {"secret"}
    assert skills.allowed_ids(None, authenticated=True) == ALL
    assert [s.id for s in skills.card_skills()] == ["echo", "image"]
    assert [s.id for s in skills.card_skills(ALL)] == ["echo", "image", "secret"]


def test_named_skill_wins(skills: SkillSet) -> None:
    assert skills.select(msg(skill_id="secret"), ALL).id == "secret"


@pytest.mark.parametrize("name", ["secret", "ghost"])
def test_unknown_and_forbidden_look_the_same(skills: SkillSet, name: str) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        skills.select(msg(skill_id=name), frozenset({"echo"}))
    assert caught.value.message == (
        f"Skill {name!r} does not exist or is not available to this caller"
    )


@pytest.mark.parametrize("bad", ["", 7, ["echo"]])
def test_skill_id_must_be_a_string(skills: SkillSet, bad: Any) -> None:
    with pytest.raises(InvalidParamsError, match="^metadata.skillId must be a non-empty string$"):
        skills.select(msg(skill_id=bad), ALL)


def test_fallbacks(skills: SkillSet) -> None:
    assert skills.select(msg(), ALL).id == "echo"  # the default
    assert skills.select(msg(), frozenset({"secret"})).id == "secret"  # the only one
    with pytest.raises(InvalidParamsError) as caught:
        skills.select(msg(), frozenset({"image", "secret"}))
    assert "image, secret" in caught.value.message
    with pytest.raises(InvalidParamsError, match="^No skill is available to this caller$"):
        skills.select(msg(), frozenset())


def test_follow_up_stays_with_the_tasks_skill(skills: SkillSet) -> None:
    first = msg(skill_id="secret")
    task = Task(id="t1", history=[first, msg(role=Role.AGENT)])
    assert skills.select(msg(), ALL, task=task).id == "secret"
    assert skills.select(msg(skill_id="secret"), ALL, task=task).id == "secret"
    with pytest.raises(
        InvalidParamsError, match="^Task t1 is served by skill 'secret', not 'echo'$"
    ):
        skills.select(msg(skill_id="echo"), ALL, task=task)
    plain = Task(id="t2", history=[msg()])
    assert skills.select(msg(), ALL, task=plain).id == "echo"
    assert skills.task_skill_id(task, ALL) == "secret"
    assert skills.task_skill_id(task, frozenset({"echo"})) == ""


@pytest.mark.parametrize(
    ("part", "ok"),
    [
        (Part(text="x"), False),  # text/plain
        (Part(raw=b"x", media_type="image/png"), True),
        (Part(raw=b"x", media_type="IMAGE/PNG; q=1"), True),
        (Part(url="https://x/y", media_type="audio/wav"), False),
        (Part(raw=b"x"), True),  # file without a media type: not checked
        (Part(data={"a": 1}), False),  # application/json
    ],
)
def test_input_modes(skills: SkillSet, part: Part, ok: bool) -> None:
    message = msg(part, skill_id="image")
    if ok:
        assert skills.select(message, ALL).id == "image"
    else:
        with pytest.raises(ContentTypeNotSupportedError) as caught:
            skills.select(message, ALL)
        assert caught.value.metadata["skillId"] == "image"


def test_card_default_modes_apply_to_skills_without_their_own(skills: SkillSet) -> None:
    with pytest.raises(
        ContentTypeNotSupportedError, match="^Skill 'echo' does not accept 'application/json'$"
    ):
        skills.select(msg(Part(data=None)), ALL)  # echo: defaults text/plain
    assert skills.select(msg(Part(text="x", media_type="text/plain")), ALL).id == "echo"


def test_accepted_output_modes(skills: SkillSet) -> None:
    assert skills.select(msg(), ALL, accepted_output_modes=["text/*"]).id == "echo"
    with pytest.raises(
        ContentTypeNotSupportedError,
        match="^Skill 'echo' produces none of the accepted output modes$",
    ):
        skills.select(msg(), ALL, accepted_output_modes=["image/png"])


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ("text/plain", "text/plain", True),
        ("text/*", "text/html", True),
        ("*/*", "image/png", True),
        ("text", "text/markdown", True),
        ("text/plain", "text/html", False),
        ("image/*", "text/plain", False),
        ("application/json", "APPLICATION/JSON;charset=utf-8", True),
    ],
)
def test_media_matches(a: str, b: str, match: bool) -> None:
    assert media_matches(a, b) is match
    assert media_matches(b, a) is match


async def test_router_dispatches_on_skill_id(skills: SkillSet) -> None:
    router = SkillRouter(skills)
    context = RequestContext(message=None, task_id="t", context_id="c", skill_id="image")
    await router.execute(context, None)  # type: ignore[arg-type]
    await router.cancel(context, None)  # type: ignore[arg-type]
    await router.cancel(RequestContext(message=None, task_id="t", context_id="c"), None)  # type: ignore[arg-type]
    image = skills.by_id["image"].executor
    echo = skills.by_id["echo"].executor
    assert isinstance(image, Recorder) and image.calls == ["execute", "cancel"]
    assert isinstance(echo, Recorder) and echo.calls == []
