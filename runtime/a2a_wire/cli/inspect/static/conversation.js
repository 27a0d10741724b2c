// The Conversation pane: send text, data and file parts to a chosen skill, blocking or
// streaming; a task waiting for input (or authentication) is continued by the next message;
// states and artifacts are shown as they change.

import { call, emit, newId, on, openStream } from "./api.js";
import { apply } from "./store.js";
import { $, INTERRUPTED, badge, clear, coalesce, el, errorText, partsView, statusText } from "./view.js";

const turns = [];            // { kind: "user"|"agent", ..., node }
const byStream = new Map();  // streamId -> agent turn
let thread = { contextId: "", taskId: "", state: "" };

function showThread() {
  const note = $("#thread");
  if (!thread.contextId) {
    clear(note, el("span", { class: "muted", text: "New conversation." }));
    return;
  }
  const waiting = thread.taskId && INTERRUPTED.has(thread.state);
  const what = waiting
    ? el("span", {}, "Continuing task ", el("code", { text: thread.taskId }), " (", badge(thread.state), ")")
    : "Same conversation, new task";
  clear(note, what, " in context ", el("code", { text: thread.contextId }));
}

async function fileParts(input) {
  const parts = [];
  for (const file of input.files || []) {
    const data = new Uint8Array(await file.arrayBuffer());
    let binary = "";
    for (let i = 0; i < data.length; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
    parts.push({ raw: btoa(binary), filename: file.name, mediaType: file.type || "application/octet-stream" });
  }
  return parts;
}

async function buildRequest() {
  const parts = [];
  const text = $("#msg-text").value;
  if (text) parts.push({ text });
  const data = $("#msg-data").value.trim();
  if (data) {
    try {
      parts.push({ data: JSON.parse(data) });
    } catch (exc) {
      throw new Error(`The data part is not JSON: ${exc.message}`);
    }
  }
  parts.push(...await fileParts($("#msg-file")));
  if (!parts.length) throw new Error("Write a text, a data part or pick a file.");
  const message = { messageId: newId(), role: "ROLE_USER", parts };
  const skill = $("#msg-skill").value;
  if (skill) message.metadata = { skillId: skill };
  if (thread.contextId) message.contextId = thread.contextId;
  if (thread.taskId && INTERRUPTED.has(thread.state)) message.taskId = thread.taskId;
  const request = { message };
  if ($("#msg-mode").value === "blocking" && $("#msg-immediate").checked) {
    request.configuration = { returnImmediately: true };
  }
  return request;
}

function addTurn(turn) {
  turn.node = el("div", { class: `turn turn-${turn.kind}` });
  turns.push(turn);
  $("#transcript").append(turn.node);
  renderTurn(turn);
  turn.node.scrollIntoView({ block: "end" });
  return turn;
}

function artifactView(artifact) {
  return el("div", { class: "artifact", dataset: { artifactId: artifact.artifactId } },
    el("div", { class: "artifact-head" },
      el("strong", { text: artifact.name || artifact.artifactId }),
      el("span", { class: "muted", text: ` ${artifact.chunks} chunk${artifact.chunks === 1 ? "" : "s"}` })),
    partsView(artifact.segments));
}

function renderTurn(turn) {
  if (turn.kind === "user") {
    clear(turn.node, el("div", { class: "who", text: "you" }), partsView(turn.parts));
    return;
  }
  const head = el("div", { class: "who" }, "agent");
  const body = [];
  if (turn.error) body.push(el("p", { class: "error", text: errorText(turn.error) }));
  if (turn.message) body.push(partsView(turn.message.parts));
  if (turn.task) {
    const t = turn.task;
    head.append(" · task ", el("code", { text: t.id }), " ", badge(t.state));
    body.push(el("ol", { class: "states" }, t.statuses.map((s) =>
      el("li", {}, badge(s.state), el("span", { class: "status-text", text: ` ${statusText(s)}` })))));
    for (const artifact of t.artifacts.values()) body.push(artifactView(artifact));
  }
  if (turn.streaming && !turn.ended) body.push(el("p", { class: "muted live", text: "streaming…" }));
  if (turn.resubscribes) body.push(el("p", { class: "muted", text: `reconnected ${turn.resubscribes} time(s)` }));
  clear(turn.node, head, ...body);
}

const dirty = new Set();
const flush = coalesce(() => {
  for (const turn of dirty) renderTurn(turn);
  dirty.clear();
  showThread();
});

function follow(turn, model) {
  if (model && !turn.task) turn.task = model;
  if (turn.task) {
    thread.taskId = turn.task.id;
    thread.contextId = turn.task.contextId || thread.contextId;
    thread.state = turn.task.state;
    emit("task-seen", turn.task.id);
  }
  dirty.add(turn);
  flush();
}

function answer(turn, result) {
  if (result.message) {
    turn.message = result.message;
    thread = { contextId: result.message.contextId || thread.contextId, taskId: "", state: "" };
  }
  follow(turn, result.task ? apply({ task: result.task }) : null);
}

async function send() {
  const problem = $("#msg-problem");
  problem.textContent = "";
  let request;
  try {
    request = await buildRequest();
  } catch (exc) {
    problem.textContent = exc.message;
    return;
  }
  addTurn({ kind: "user", parts: request.message.parts });
  const streaming = $("#msg-mode").value === "streaming";
  const turn = addTurn({ kind: "agent", streaming, ended: false });
  $("#msg-text").value = "";
  if (!streaming) {
    const answered = await call("SendMessage", request);
    if (answered.error) turn.error = answered.error;
    else answer(turn, answered.result);
    turn.ended = true;
    follow(turn, null);
    return;
  }
  turn.streamId = newId();
  byStream.set(turn.streamId, turn);
  const opened = await openStream(turn.streamId, "SendStreamingMessage", request);
  if (opened.error) {
    byStream.delete(turn.streamId);
    turn.error = opened.error;
    turn.ended = true;
    follow(turn, null);
  }
}

on("stream", (item) => {
  const turn = byStream.get(item.streamId);
  if (!turn) return;
  turn.resubscribes = item.resubscribes;
  if (item.event.message) answer(turn, { message: item.event.message });
  else follow(turn, apply(item.event));
});

on("stream-end", (item) => {
  const turn = byStream.get(item.streamId);
  if (!turn) return;
  byStream.delete(item.streamId);
  turn.ended = true;
  if (item.error) turn.error = item.error;
  follow(turn, null);
});

on("card-skills", (skills) => {
  const select = $("#msg-skill");
  const chosen = select.value;
  clear(select, el("option", { value: "", text: "(the agent's default skill)" }),
    skills.map((s) => el("option", { value: String(s.id), text: `${s.id}${s.name ? ` — ${s.name}` : ""}` })));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
});

export function setupConversation() {
  $("#msg-form").addEventListener("submit", (event) => { event.preventDefault(); send(); });
  $("#msg-new").addEventListener("click", () => {
    thread = { contextId: "", taskId: "", state: "" };
    showThread();
  });
  $("#msg-mode").addEventListener("change", () => {
    $("#msg-immediate").disabled = $("#msg-mode").value !== "blocking";
  });
  $("#msg-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); send(); }
  });
  showThread();
}

