"""Skills over real HTTP: card publication, routing, permissions, media types, extended card."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from server_support import ScriptedAgent, error, make_card, result, send_params

from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RegisteredClient,
    RequestContext,
    SecurityConfig,
    Skill,
    TaskUpdater,
    create_app,
    hash_secret,
)
from a2a_wire.types import AgentSkill

A = {"Authorization": "Bearer skills-a"}  # every skill
B = {"Authorization": "Bearer skills-b"}  # echo and upper only


class Tagging(AgentExecutor):
    """Answers with an artifact naming the skill; "ask" asks for input first."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cancelled = 0

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None and context.skill_id == self.name
        text = context.message.parts[0].text or ""
        updater = TaskUpdater(events, context)
        if text == "ask":
            await updater.require_input("more?")
            return
        await updater.add_artifact(f"{self.name}:{text}")
        await updater.complete()

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        assert context.skill_id == self.name
        self.cancelled += 1


def skill(skill_id: str, **kwargs: Any) -> Skill:
    modes = {k: kwargs.pop(k) for k in ("input_modes", "output_modes") if k in kwargs}
    card = AgentSkill(
        id=skill_id,
        name=skill_id.title(),
        description=f"the {skill_id} skill",
        tags=["t"],
        examples=[f"try {skill_id}"],
        **modes,
    )
    return Skill(card, Tagging(skill_id), **kwargs)


SKILLS = [
    skill("echo", default=True),
    skill("upper", input_modes=["text/plain", "image/*"]),
    skill("admin", public=False),
]


def clients() -> list[RegisteredClient]:
    return [
        RegisteredClient("a", token_hash=hash_secret("skills-a", log2_n=4)),
        RegisteredClient(
            "b", token_hash=hash_secret("skills-b", log2_n=4), skills=["echo", "upper"]
        ),
    ]


@pytest.fixture
def app() -> web.Application:
    """No executor: the skills answer."""
    security = SecurityConfig(clients=clients(), skills=SKILLS, extended_card=True)
    return create_app(make_card(extended=True), security=security)


def artifact(task: dict[str, Any]) -> str:
    return str(task["artifacts"][0]["parts"][0]["text"])


async def send(client: Any, text: str, headers: dict[str, str], **fields: Any) -> Any:
    return (await result(client, "SendMessage", send_params(text, **fields), headers=headers))[
        "task"
    ]


async def test_public_card_lists_public_skills(client: Any) -> None:
    card = await (await client.get("/.well-known/agent-card.json")).json()
    assert [s["id"] for s in card["skills"]] == ["echo", "upper"]
    assert card["skills"][1] == {
        "id": "upper",
        "name": "Upper",
        "description": "the upper skill",
        "tags": ["t"],
        "examples": ["try upper"],
        "inputModes": ["text/plain", "image/*"],
    }


async def test_extended_card_lists_the_callers_skills(client: Any) -> None:
    a_card = await result(client, "GetExtendedAgentCard", None, headers=A)
    b_card = await result(client, "GetExtendedAgentCard", None, headers=B)
    assert [s["id"] for s in a_card["skills"]] == ["echo", "upper", "admin"]
    assert [s["id"] for s in b_card["skills"]] == ["echo", "upper"]


async def test_routing_rule(client: Any) -> None:
    assert artifact(await send(client, "x", A)) == "echo:x"  # the default
    named = await send(client, "x", A, metadata={"skillId": "upper"})
    assert artifact(named) == "upper:x"
    assert artifact(await send(client, "x", A, metadata={"skillId": "admin"})) == "admin:x"


async def test_follow_up_goes_to_the_tasks_skill(client: Any) -> None:
    task = await send(client, "ask", A, metadata={"skillId": "upper"})
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = await send(client, "go", A, taskId=task["id"])
    assert artifact(done) == "upper:go"
    asked = await send(client, "ask", A, metadata={"skillId": "upper"})
    err = await error(
        client,
        "SendMessage",
        send_params("go", taskId=asked["id"], metadata={"skillId": "echo"}),
        headers=A,
    )
    assert err["code"] == -32602


async def test_cancel_goes_to_the_tasks_skill(client: Any) -> None:
    admin = SKILLS[2].executor
    assert isinstance(admin, Tagging)
    before = admin.cancelled
    task = await send(client, "ask", A, metadata={"skillId": "admin"})
    await result(client, "CancelTask", {"id": task["id"]}, headers=A)
    assert admin.cancelled == before + 1


@pytest.mark.parametrize("name", ["admin", "nonexistent"])
async def test_forbidden_and_unknown_skills_are_32602_naming_the_skill(
    client: Any, name: str
) -> None:
    err = await error(
        client, "SendMessage", send_params("x", metadata={"skillId": name}), headers=B
    )
    assert err["code"] == -32602
    assert err["message"] == f"Skill {name!r} does not exist or is not available to this caller"


async def test_unsupported_media_type_is_32005(client: Any) -> None:
    image = {"raw": "iVBORw0KGgo=", "mediaType": "image/png"}
    params = send_params("x", metadata={"skillId": "upper"})
    params["message"]["parts"].append(image)
    assert artifact((await result(client, "SendMessage", params, headers=A))["task"]) == "upper:x"
    params = send_params("x")
    params["message"]["parts"].append(image)
    err = await error(client, "SendMessage", params, headers=A)
    assert err["code"] == -32005
    assert err["data"][0]["metadata"] == {"skillId": "echo", "mediaType": "image/png"}
    streamed = send_params("x", configuration={"acceptedOutputModes": ["video/mp4"]})
    assert (await error(client, "SendMessage", streamed, headers=A))["code"] == -32005


async def test_without_clients_only_public_skills_are_usable(aiohttp_client: Any) -> None:
    client = await aiohttp_client(create_app(make_card(), security=SecurityConfig(skills=SKILLS)))
    assert artifact(await send(client, "x", {}, metadata={"skillId": "upper"})) == "upper:x"
    err = await error(client, "SendMessage", send_params("x", metadata={"skillId": "admin"}))
    assert err["code"] == -32602


def test_executor_and_skills_are_exclusive() -> None:
    with pytest.raises(
        ValueError, match="^pass the agent either as executor or through SecurityConfig.skills$"
    ):
        create_app(make_card(), ScriptedAgent(), security=SecurityConfig(skills=SKILLS))
    with pytest.raises(ValueError, match="^create_app needs an executor or SecurityConfig.skills$"):
        create_app(make_card())
