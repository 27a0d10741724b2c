// The Conversation pane: send text, data and file parts to a chosen skill, blocking or
// streaming, and see the exchange as turns. Each agent turn lists what the agent sent in order
// (status updates, messages, artifacts growing as chunks arrive) and the trace id of its
// exchange. A turn ends where the agent waits for the user (INPUT_REQUIRED or AUTH_REQUIRED,
// spec 11.7: the inspector closes the stream there even if the agent keeps it open); the agent's
// question is shown, and the next message answers it in the same task (taskId and contextId).

import { call, emit, newId, on, openStream } from "./api.js";
import { apply } from "./store.js";
import { $, INTERRUPTED, TERMINAL, badge, clear, coalesce, copyButton, el, errorText, partsView, stateName, statusText } from "./view.js";

const byStream = new Map();      // streamId -> agent turn
const seenArtifacts = new Set(); // "taskId artifactId" shown in an earlier turn
let thread = { contextId: "", taskId: "", state: "", question: "" };

const NEEDS = { "input-required": "the agent needs input", "auth-required": "the agent needs authentication" };

function waiting() {
  return Boolean(thread.taskId) && INTERRUPTED.has(thread.state);
}

function showThread() {
  const note = $("#thread");
  const text = $("#msg-text");
  text.placeholder = waiting() && thread.question
    ? `Answer the agent: ${thread.question} (Ctrl+Enter sends)`
    : "Text part (Ctrl+Enter sends)";
  if (!thread.contextId) {
    clear(note, el("span", { class: "muted", text: "New conversation." }));
    return;
  }
  const what = waiting()
    ? el("span", {}, "Answering task ", el("code", { text: thread.taskId }), " (", badge(thread.state), ")")
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
  if (waiting()) message.taskId = thread.taskId;
  const request = { message };
  if ($("#msg-mode").value === "blocking" && $("#msg-immediate").checked) {
    request.configuration = { returnImmediately: true };
  }
  return request;
}

function addTurn(turn) {
  turn.node = el("div", { class: `turn turn-${turn.kind}` });
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

// Consecutive text parts become one segment, so that a long stream of chunks stays cheap.
function segmentsOf(parts, segments = []) {
  for (const part of parts || []) {
    const last = segments[segments.length - 1];
    if (part.text !== undefined && last && last.text !== undefined) last.text += part.text;
    else segments.push(part.text !== undefined ? { text: part.text } : { ...part });
  }
  return segments;
}

function entryView(entry) {
  if (entry.type === "status") {
    const text = statusText(entry);
    const asks = INTERRUPTED.has(stateName(entry.state)) && text;
    return el("li", { class: `entry entry-status${asks ? " question" : ""}` }, badge(entry.state),
      asks ? el("span", { class: "question-text", text: ` The agent asks: ${text}` })
        : el("span", { class: "status-text", text: text ? ` ${text}` : "" }));
  }
  if (entry.type === "artifact") return el("li", { class: "entry entry-artifact" }, artifactView(entry));
  return el("li", { class: "entry entry-message" }, el("div", { class: "who", text: "message" }), partsView(entry.message.parts));
}

function turnEnd(turn) {
  const name = stateName(turn.state);
  if (!turn.ended || turn.error) return null;
  if (INTERRUPTED.has(name)) {
    const answer = el("button", { type: "button", class: "small", text: "Answer" });
    answer.addEventListener("click", () => $("#msg-text").focus());
    // Authentication may mean presenting another identity: the Card pane's Identity section.
    const identity = name === "auth-required"
      ? el("button", { type: "button", class: "small show-identity", text: "Identity", onclick: () => emit("show-pane", "card") })
      : null;
    return el("div", { class: "turn-end", dataset: { turnEnd: name } },
      `End of turn: ${NEEDS[name]}. Your next message answers it in task `,
      el("code", { text: turn.taskId }), ". ", answer, " ", identity);
  }
  if (TERMINAL.has(name)) return el("div", { class: "turn-end", dataset: { turnEnd: name } }, `The task is ${name}.`);
  return null;
}

function renderTurn(turn) {
  if (turn.kind === "user") {
    const continues = turn.taskId ? el("div", { class: "muted", text: `answers task ${turn.taskId}` }) : null;
    clear(turn.node, el("div", { class: "who", text: "you" }), partsView(turn.parts), continues);
    return;
  }
  const head = el("div", { class: "who" }, "agent");
  if (turn.taskId) head.append(" · task ", el("code", { text: turn.taskId }), " ", badge(turn.state));
  const trace = turn.traceId
    ? el("div", { class: "trace" }, "trace ", el("code", { class: "trace-id", text: turn.traceId }), " ",
      copyButton("Copy", turn.traceId),
      el("button", { type: "button", class: "small show-traffic", text: "Traffic", onclick: () => emit("traffic-trace", turn.traceId) }))
    : null;
  const body = [];
  if (turn.error) body.push(el("p", { class: "error", text: errorText(turn.error) }));
  if (turn.entries.length) body.push(el("ol", { class: "timeline" }, turn.entries.map(entryView)));
  if (turn.streaming && !turn.ended) body.push(el("p", { class: "muted live", text: "streaming…" }));
  if (turn.resubscribes) body.push(el("p", { class: "muted", text: `reconnected ${turn.resubscribes} time(s)` }));
  clear(turn.node, head, trace, ...body, turnEnd(turn));
}

const dirty = new Set();
const flush = coalesce(() => {
  for (const turn of dirty) renderTurn(turn);
  dirty.clear();
  showThread();
});

function addStatus(turn, status) {
  if (!status || !status.state) return;
  const last = [...turn.entries].reverse().find((e) => e.type === "status");
  const messageId = status.message ? status.message.messageId : "";
  if (last && last.state === status.state && last.messageId === messageId) return;
  turn.entries.push({ type: "status", state: status.state, message: status.message, messageId });
  turn.state = status.state;
}

function addArtifact(turn, taskId, artifact, appendChunk) {
  const key = `${taskId} ${artifact.artifactId}`;
  let entry = turn.artifacts.get(artifact.artifactId);
  if (entry && appendChunk) {
    segmentsOf(artifact.parts, entry.segments);
    entry.chunks += 1;
    return;
  }
  if (!entry) {
    entry = { type: "artifact", artifactId: artifact.artifactId, chunks: 0 };
    turn.artifacts.set(artifact.artifactId, entry);
    turn.entries.push(entry);
  }
  Object.assign(entry, { name: artifact.name || "", segments: segmentsOf(artifact.parts), chunks: entry.chunks + 1 });
  seenArtifacts.add(key);
}

// One StreamResponse (or a blocking answer) into the turn, in the order it came.
function take(turn, event) {
  if (event.message) {
    turn.entries.push({ type: "message", message: event.message });
    thread = { contextId: event.message.contextId || thread.contextId, taskId: "", state: "", question: "" };
  } else if (event.task) {
    const t = event.task;
    const opening = !turn.taskId && turn.continues && INTERRUPTED.has(stateName(t.status && t.status.state));
    turn.taskId = t.id;
    // A follow-up's stream opens with the task as it was (still waiting): no news of this turn.
    if (opening) turn.state = t.status.state;
    else addStatus(turn, t.status);
    for (const artifact of t.artifacts || []) {
      if (!seenArtifacts.has(`${t.id} ${artifact.artifactId}`) || turn.artifacts.has(artifact.artifactId)) {
        addArtifact(turn, t.id, artifact, false);
      }
    }
  } else if (event.statusUpdate) {
    turn.taskId = turn.taskId || event.statusUpdate.taskId;
    addStatus(turn, event.statusUpdate.status);
  } else if (event.artifactUpdate && event.artifactUpdate.artifact) {
    const u = event.artifactUpdate;
    turn.taskId = turn.taskId || u.taskId;
    addArtifact(turn, u.taskId, u.artifact, Boolean(u.append));
  }
  const model = event.message ? null : apply(event);
  if (model) {
    thread.taskId = turn.taskId;
    thread.contextId = model.contextId || thread.contextId;
    thread.state = stateName(turn.state);
    const last = [...turn.entries].reverse().find((e) => e.type === "status");
    thread.question = last ? statusText(last) : "";
    emit("task-seen", model.id);
  }
  dirty.add(turn);
  flush();
}

function finish(turn, fields) {
  Object.assign(turn, fields, { ended: true });
  dirty.add(turn);
  flush();
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
  const continues = request.message.taskId || "";
  addTurn({ kind: "user", parts: request.message.parts, taskId: continues });
  const streaming = $("#msg-mode").value === "streaming";
  const turn = addTurn({ kind: "agent", streaming, ended: false, continues, entries: [], artifacts: new Map(), taskId: "", state: "" });
  $("#msg-text").value = "";
  if (!streaming) {
    const answered = await call("SendMessage", request);
    turn.traceId = answered.traceId || "";
    if (answered.error) finish(turn, { error: answered.error });
    else {
      take(turn, answered.result);
      finish(turn, {});
    }
    return;
  }
  turn.streamId = newId();
  byStream.set(turn.streamId, turn);
  const opened = await openStream(turn.streamId, "SendStreamingMessage", request);
  turn.traceId = opened.traceId || "";
  if (opened.error) {
    byStream.delete(turn.streamId);
    finish(turn, { error: opened.error });
  } else {
    dirty.add(turn);
    flush();
  }
}

on("stream", (item) => {
  const turn = byStream.get(item.streamId);
  if (!turn) return;
  turn.resubscribes = item.resubscribes;
  take(turn, item.event);
});

on("stream-end", (item) => {
  const turn = byStream.get(item.streamId);
  if (!turn) return;
  byStream.delete(item.streamId);
  finish(turn, { error: item.error || turn.error });
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
    thread = { contextId: "", taskId: "", state: "", question: "" };
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
