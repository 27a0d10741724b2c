"""``a2a-wire inspect`` in headless Chromium against a real ``a2a-wire serve``, pane by pane.

Agents that must still be running when the test acts are held by gate files the test creates
(tests/inspector_agents.py); every wait is for something the page shows.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ServerProcess
from inspector_support import (
    AGENT_TOKEN,
    CLIENT_ID,
    CLIENT_SECRET,
    CardServer,
    Inspector,
    open_agent,
    pane,
    send,
)
from oauth_provider import Provider

pytestmark = pytest.mark.timeout(120)


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def findings(page: Any, level: str) -> str:
    return "\n".join(page.locator(f"#card-body > .findings .finding-{level}").all_inner_texts())


def test_the_card_loads_with_its_skills_and_the_extended_card(
    page: Any, inspector: Inspector, agent: ServerProcess
) -> None:
    open_agent(page, inspector, agent.url)
    assert page.evaluate("document.body.dataset.agent") == "ready"
    expect(page.locator("#card-body h2")).to_have_text("inspector test agent")
    assert f"JSON-RPC 1.0 interface at {agent.url}/" in findings(page, "ok")
    skills = page.locator("#card-body > table.skills").inner_text()
    assert "steps" in skills and "flood" in skills and "backstage" not in skills
    assert "extended card\tyes" in page.locator("#card-body > table.kv").first.inner_text()
    page.click("#fetch-extended")  # the credential is a registered client's: allowed
    expect(page.locator("#extended-card table.skills")).to_contain_text("backstage")


def test_a_broken_card_is_flagged(page: Any, inspector: Inspector, cards: CardServer) -> None:
    open_agent(page, inspector, cards.url + "/broken")
    assert page.evaluate("document.body.dataset.agent") == "unusable"
    expect(page.locator("#card-error")).to_contain_text("NoCompatibleInterfaceError")
    errors = findings(page, "error")
    for wanted in (
        "no JSONRPC 1.0 interface (offers: JSONRPC 0.3)",
        "REQUIRED member 'description' is missing",
        "skill id 'a' is used twice",
        "requires scheme 'oauth', which securitySchemes does not declare",
        "the protected header is not base64url JSON",
    ):
        assert wanted in errors, errors
    warnings = findings(page, "warning")
    for wanted in (
        "'url' is an A2A 0.3 member",
        "'colour' is not a member of this object",
        "'text' is not a type/subtype",
        "'image' is not a type/subtype",
    ):
        assert wanted in warnings, warnings
    expect(page.locator("#agent-status")).to_contain_text("errors")

    open_agent(page, inspector, cards.url + "/tampered")
    assert "does not verify: agent card signature not verified" in findings(page, "error")
    open_agent(page, inspector, cards.url + "/signed")
    assert "signature verified with trusted key 'test-key'" in findings(page, "ok")
    assert not findings(page, "error")


def test_a_streamed_message_shows_its_artifact_growing(
    page: Any, inspector: Inspector, agent: ServerProcess, gates: Path
) -> None:
    open_agent(page, inspector, agent.url)
    send(page, "alpha beta gamma", skill="steps")
    turn = page.locator(".turn-agent").last
    artifact = turn.locator(".artifact .part-text")
    expect(artifact).to_have_text("alpha")
    expect(turn.locator(".who .badge")).to_have_text("working")
    (gates / "alpha-1").touch()
    expect(artifact).to_have_text("alpha beta")
    (gates / "alpha-2").touch()
    expect(artifact).to_have_text("alpha beta gamma")
    expect(turn.locator(".who .badge")).to_have_text("completed")
    expect(turn.locator(".artifact-head")).to_contain_text("3 chunks")
    statuses = turn.locator(".timeline .entry-status .badge").all_inner_texts()
    assert statuses == ["submitted", "working", "completed"]
    kinds = turn.locator(".timeline > li").evaluate_all("items => items.map(i => i.className)")
    assert kinds == [  # in the order they came: the artifact began before the task completed
        "entry entry-status",
        "entry entry-status",
        "entry entry-artifact",
        "entry entry-status",
    ]
    expect(turn.locator(".turn-end")).to_have_text("The task is completed.")
    page.fill("#traffic-filter", "artifactUpdate")
    expect(page.locator("#traffic-list .row")).to_have_count(3)


def test_a_multi_turn_flow_completes(page: Any, inspector: Inspector, agent: ServerProcess) -> None:
    open_agent(page, inspector, agent.url)
    send(page, "hello", skill="ask")  # streamed, then the answer blocking
    first = page.locator(".turn-agent").last
    expect(first.locator(".who .badge")).to_have_text("input-required")
    expect(first.locator(".question")).to_contain_text("The agent asks: What is your name?")
    expect(page.locator("#thread")).to_contain_text("Answering task")
    task_id = first.locator(".who code").inner_text()
    send(page, "Ada", skill="ask", mode="blocking")
    second = page.locator(".turn-agent").last
    expect(second.locator(".who .badge")).to_have_text("completed")
    expect(second.locator(".artifact")).to_contain_text("Hello, Ada!")
    assert second.locator(".who code").inner_text() == task_id  # the same task, continued
    # This turn's own statuses only: the first turn's stay with the first turn.
    assert second.locator(".timeline .entry-status .badge").all_inner_texts() == ["completed"]


def test_a_conversation_of_three_turns_in_one_task(
    page: Any, inspector: Inspector, agent: ServerProcess
) -> None:
    open_agent(page, inspector, agent.url)
    send(page, "hello", skill="interview")
    first = page.locator(".turn-agent").nth(0)
    expect(first.locator(".turn-end")).to_have_attribute("data-turn-end", "input-required")
    expect(first.locator(".turn-end")).to_contain_text("End of turn: the agent needs input.")
    expect(first.locator(".question")).to_contain_text("What is your name?")
    expect(page.locator("#msg-text")).to_have_attribute(
        "placeholder", re.compile("^Answer the agent: What is your name?")
    )
    task_id = first.locator(".who code").inner_text()
    expect(first.locator(".turn-end code")).to_have_text(task_id)

    first.locator(".turn-end button").click()  # answer in place: the composer, same task
    page.keyboard.type("Ada")
    page.click("#msg-send")
    expect(page.locator(".turn-user").nth(1)).to_contain_text(f"answers task {task_id}")
    second = page.locator(".turn-agent").nth(1)
    expect(second.locator(".turn-end")).to_have_attribute("data-turn-end", "auth-required")
    expect(second.locator(".turn-end")).to_contain_text("the agent needs authentication")
    expect(second.locator(".question")).to_contain_text("Sign in to continue, Ada.")
    second.locator(".turn-end .show-identity").click()  # where another identity is picked
    expect(page.locator("#identity h3")).to_have_text("Identity")
    pane(page, "conversation")
    assert second.locator(".who code").inner_text() == task_id
    # The follow-up's stream opens with the task as it was (input-required): not this turn's.
    assert second.locator(".timeline .entry-status .badge").all_inner_texts() == [
        "working",
        "auth-required",
    ]

    send(page, "signed in", skill="interview")
    third = page.locator(".turn-agent").nth(2)
    expect(third.locator(".turn-end")).to_have_attribute("data-turn-end", "completed")
    expect(third.locator(".artifact")).to_contain_text("Welcome, Ada!")
    assert third.locator(".who code").inner_text() == task_id
    items = third.locator(".timeline > li").evaluate_all("items => items.map(i => i.innerText)")
    assert [item.split()[0] for item in items] == ["working", "welcome", "completed"], items
    expect(page.locator("#thread")).to_contain_text("Same conversation, new task")
    assert page.locator(".turn-agent").count() == 3 and page.locator(".turn-user").count() == 3
    traces = page.locator(".turn-agent .trace-id").all_inner_texts()
    assert len(set(traces)) == 3 and all(re.fullmatch("[0-9a-f]{32}", t) for t in traces)


def test_each_turn_names_its_trace_and_its_traffic(
    page: Any, inspector: Inspector, agent: ServerProcess
) -> None:
    open_agent(page, inspector, agent.url)
    send(page, "trace me")
    turn = page.locator(".turn-agent").last
    expect(turn.locator(".turn-end")).to_have_text("The task is completed.")
    trace_id = turn.locator(".trace-id").inner_text()
    turn.locator(".show-traffic").click()
    expect(page.locator("#traffic-filter")).to_have_value(trace_id)
    rows = page.locator("#traffic-list .row")
    expect(rows.first).to_contain_text("POST SendStreamingMessage")
    expect(rows.last).to_contain_text("stream ended")
    rows.first.click()
    detail = page.locator("#traffic-detail")
    expect(detail.locator(".trace-id")).to_have_text(trace_id)
    traceparent = detail.locator("table.headers tr").filter(has_text="traceparent")
    expect(traceparent.locator("td")).to_have_text(re.compile(f"^00-{trace_id}-[0-9a-f]{{16}}-01$"))
    rows.last.click()  # any record of the exchange names it
    expect(detail.locator(".trace-id")).to_have_text(trace_id)


def _held_task(page: Any, text: str) -> tuple[str, str]:
    """Send ``text`` to the hold skill without waiting; return the task and context ids."""
    pane(page, "conversation")
    page.select_option("#msg-skill", "hold")
    page.select_option("#msg-mode", "blocking")
    page.check("#msg-immediate")
    page.fill("#msg-text", text)
    page.click("#msg-send")
    turn = page.locator(".turn-agent").last
    expect(turn.locator(".who code")).to_have_count(1)
    task_id = turn.locator(".who code").inner_text()
    context = page.locator("#thread code").last.inner_text()
    return task_id, context


def test_a_task_is_cancelled(page: Any, inspector: Inspector, agent: ServerProcess) -> None:
    open_agent(page, inspector, agent.url)
    task_id, context = _held_task(page, "cancel-me")
    pane(page, "tasks")
    page.fill("#tasks-context", context)
    page.click("#tasks-list-button")
    page.click(f"tr.task-row[data-task-id='{task_id}']")
    detail = page.locator("#task-detail")
    expect(detail.locator("h3 .badge")).to_have_text("working")
    page.click("#task-subscribe")
    expect(page.locator("#task-following")).to_have_text("following live")
    page.click("#task-cancel")
    expect(detail.locator("h3 .badge")).to_have_text("canceled")
    expect(page.locator("#task-following")).to_have_text("ended")
    assert page.locator("#task-states .badge").all_inner_texts()[-1] == "canceled"
    expect(page.locator("#task-states")).to_contain_text("working")


def test_tasks_are_paged(page: Any, inspector: Inspector, agent: ServerProcess) -> None:
    open_agent(page, inspector, agent.url)
    for number in range(5):
        send(page, f"page me {number}", mode="blocking")
        expect(page.locator(".turn-agent .who .badge")).to_have_count(number + 1)
    context = page.locator("#thread code").last.inner_text()
    pane(page, "tasks")
    page.fill("#tasks-context", context)
    page.fill("#tasks-page-size", "2")
    page.click("#tasks-list-button")
    rows = page.locator("tr.task-row")
    expect(page.locator("#tasks-page")).to_have_text("page 1 · tasks 1–2 of 5")
    expect(rows).to_have_count(2)
    seen = set(rows.evaluate_all("rows => rows.map(r => r.dataset.taskId)"))
    page.click("#tasks-next")
    expect(page.locator("#tasks-page")).to_have_text("page 2 · tasks 3–4 of 5")
    seen |= set(rows.evaluate_all("rows => rows.map(r => r.dataset.taskId)"))
    page.click("#tasks-next")
    expect(page.locator("#tasks-page")).to_have_text("page 3 · tasks 5–5 of 5")
    expect(rows).to_have_count(1)
    expect(page.locator("#tasks-next")).to_be_disabled()
    seen |= set(rows.evaluate_all("rows => rows.map(r => r.dataset.taskId)"))
    assert len(seen) == 5
    page.click("#tasks-prev")
    expect(page.locator("#tasks-page")).to_have_text("page 2 · tasks 3–4 of 5")


def test_a_push_notification_arrives(
    page: Any, inspector: Inspector, agent: ServerProcess, gates: Path
) -> None:
    open_agent(page, inspector, agent.url)
    task_id, _ = _held_task(page, "push-me")
    pane(page, "push")
    expect(page.locator("#push-webhook")).to_contain_text(inspector.origin + "/hook/")
    page.fill("#push-task", task_id)
    page.click("#push-create")
    expect(page.locator("#push-configs .push-config")).to_have_count(1)
    expect(page.locator("#push-configs")).to_contain_text(inspector.origin + "/hook/")
    (gates / "push-me").touch()
    events = page.locator("#push-events .push-event")
    expect(events.filter(has_text="completed")).to_have_count(1)
    assert all(task_id in text for text in events.all_inner_texts())
    expect(page.locator("#push-count")).to_have_text(re.compile(r"\d+ notifications? received"))
    page.fill("#traffic-filter", "push")
    expect(page.locator("#traffic-list .row.kind-push").first).to_contain_text("webhook 204")


def test_credentials_are_never_shown(page: Any, inspector: Inspector, agent: ServerProcess) -> None:
    open_agent(page, inspector, agent.url)
    send(page, "secret?", mode="blocking")
    expect(page.locator(".turn-agent .who .badge")).to_have_text("completed")
    page.fill("#traffic-filter", "SendMessage")
    page.locator("#traffic-list .row.kind-request").first.click()
    detail = page.locator("#traffic-detail")
    expect(detail.locator("table.headers")).to_contain_text("Bearer <hidden>")
    detail.get_by_role("button", name="Copy as curl").click()
    curl = page.evaluate("navigator.clipboard.readText()")
    assert '-H "Authorization: Bearer $A2A_WIRE_TOKEN"' in curl and "SendMessage" in curl
    assert AGENT_TOKEN not in curl
    assert AGENT_TOKEN not in page.content()
    state = page.evaluate("fetch('api/state').then(r => r.text())")
    assert AGENT_TOKEN not in state and '"credential":true' in state


def test_the_page_runs_the_cards_client_credentials_flow(
    page: Any, bare: Inspector, guarded: ServerProcess, provider: Provider
) -> None:
    open_agent(page, bare, guarded.url)
    expect(page.locator("#credential")).to_have_text("credential: none")
    schemes = page.locator("#identity table.schemes")
    expect(schemes).to_contain_text(f"token {provider.token_url}")
    expect(schemes).to_contain_text("header X-API-Key")
    page.select_option("#identity-scheme", "oauth2")
    page.fill("#identity-client", CLIENT_ID)
    page.fill("#identity-secret", CLIENT_SECRET)
    page.select_option("#identity-method", "client_secret_post")
    page.click("#identity-use")
    status = page.locator("#identity-status")
    expect(status).to_contain_text("Token obtained at")
    expect(status).to_contain_text(
        f"Using scheme oauth2: OAuth 2.0 client credentials, client {CLIENT_ID} (client_secret_post)"
    )
    expect(page.locator("#credential")).to_have_text("credential: oauth2 (token obtained)")
    expect(page.locator("#identity-secret")).to_have_value("")  # not kept in the page either
    send(page, "with a token", mode="blocking")
    expect(page.locator(".turn-agent .who .badge")).to_have_text("completed")
    page.fill("#traffic-filter", "SendMessage")
    page.locator("#traffic-list .row.kind-request").first.click()
    expect(page.locator("#traffic-detail table.headers")).to_contain_text("Bearer <hidden>")
    content = page.content()
    tokens = [token["access_token"] for token in provider.issued]
    assert tokens and CLIENT_SECRET not in content
    assert not [token for token in tokens if token in content]


def test_the_traffic_pane_stays_responsive_with_10000_events(
    browser: Any, page: Any, inspector: Inspector, agent: ServerProcess
) -> None:
    capped_context = browser.new_context(viewport={"width": 1440, "height": 900})
    capped = capped_context.new_page()
    try:
        capped.goto(inspector.url + "?traffic-max=4000")
        capped.wait_for_selector("body[data-live=live]")
        open_agent(page, inspector, agent.url)
        send(page, "go", skill="flood")
        turn = page.locator(".turn-agent").last
        expect(turn.locator(".who .badge")).to_have_text("completed", timeout=100_000)
        expect(turn.locator(".artifact-head")).to_contain_text("10000 chunks")
        count = page.locator("#traffic-count")
        expect(count).to_have_text(re.compile(r"^100\d\d records$"))
        assert int(count.inner_text().split()[0]) >= 10_000
        assert page.locator("#traffic-list .row").count() < 100  # only the rows in view
        page.uncheck("#traffic-follow")
        page.locator("#traffic-list").evaluate("list => { list.scrollTop = 0; }")
        first = page.locator("#traffic-list .row").first
        expect(first).to_contain_text("GET agent card")
        pane(page, "card")  # still answers at once
        expect(page.locator("#card-body h2")).to_be_visible()

        capped_rows = capped.locator("#traffic-list .row")
        expect(capped.locator("#traffic-count")).to_contain_text("hidden")
        assert capped_rows.count() < 100
        capped.locator("#traffic-list").evaluate("list => { list.scrollTop = 0; }")
        expect(capped.locator("#traffic-hidden")).to_have_text(
            re.compile(r"^\d+ older events hidden$")
        )
    finally:
        capped_context.close()


def test_screenshot(page: Any, inspector: Inspector, agent: ServerProcess, tmp_path: Path) -> None:
    """The picture of docs/inspector.md, written where ``$A2A_WIRE_INSPECTOR_SCREENSHOT`` says
    (``make inspector-screenshot``); a plain test run writes it under its own tmp_path only."""
    open_agent(page, inspector, agent.url)
    send(page, "hello", skill="ask")
    expect(page.locator(".turn-agent .who .badge").last).to_have_text("input-required")
    send(page, "Ada Lovelace", skill="ask")
    expect(page.locator(".turn-agent .who .badge").last).to_have_text("completed")
    send(page, "Streams arrive chunk by chunk, and the traffic pane shows each SSE event.")
    expect(page.locator(".turn-agent .who .badge").last).to_have_text("completed")
    page.locator("#traffic-list .row.kind-event").filter(has_text="artifactUpdate").last.click()
    expect(page.locator("#traffic-detail .json-node").first).to_be_visible()
    shot = tmp_path / "inspector.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    target = os.environ.get("A2A_WIRE_INSPECTOR_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)
