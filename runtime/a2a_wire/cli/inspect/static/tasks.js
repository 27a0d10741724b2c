// The Tasks pane: ListTasks with its filters and paging (spec 3.1.4); a task's status history,
// messages and artifacts; subscribe (re-subscribing after a dropped connection) and cancel.

import { api, call, emit, newId, on, openStream } from "./api.js";
import { apply, task as taskModel } from "./store.js";
import { $, badge, clear, coalesce, el, errorText, jsonTree, partsView, statusText } from "./view.js";

let pages = [""];          // page tokens of the pages seen: pages[i] fetches page i + 1
let page = 0;
let current = "";          // the task shown in the details
let following = null;      // { streamId, taskId, resubscribes, ended, error }
let problem = "";          // the last call's error, shown in the details

function filters() {
  const params = {};
  const contextId = $("#tasks-context").value.trim();
  if (contextId) params.contextId = contextId;
  if ($("#tasks-status").value) params.status = $("#tasks-status").value;
  const after = $("#tasks-after").value;
  if (after) params.statusTimestampAfter = new Date(after).toISOString();
  params.pageSize = Number($("#tasks-page-size").value) || 10;
  const history = $("#tasks-history").value;
  if (history !== "") params.historyLength = Number(history);
  if ($("#tasks-artifacts").checked) params.includeArtifacts = true;
  if (pages[page]) params.pageToken = pages[page];
  return params;
}

async function list() {
  const answer = await call("ListTasks", filters());
  const box = $("#tasks-list");
  if (answer.error) {
    clear(box, el("p", { class: "error", text: errorText(answer.error) }));
    return;
  }
  const result = answer.result;
  const tasks = result.tasks || [];
  for (const t of tasks) apply({ task: t });
  pages = pages.slice(0, page + 1);
  if (result.nextPageToken) pages.push(result.nextPageToken);
  const size = Number($("#tasks-page-size").value) || 10;
  const first = page * size + (tasks.length ? 1 : 0);
  const head = el("tr", {}, ["task", "context", "state", "updated", "artifacts"].map((h) => el("th", { text: h })));
  const where = `page ${page + 1} · tasks ${first}–${page * size + tasks.length} of ${result.totalSize ?? "?"}`;
  const turn = (step) => () => { page += step; list(); };
  clear(box,
    el("div", { class: "pager" },
      el("span", { id: "tasks-page", text: where }),
      el("button", { type: "button", id: "tasks-prev", text: "‹ Previous", disabled: page === 0, onclick: turn(-1) }),
      el("button", { type: "button", id: "tasks-next", text: "Next ›", disabled: !result.nextPageToken, onclick: turn(1) })),
    el("table", { class: "grid tasks" }, head, tasks.map((t) =>
      el("tr", { class: "task-row", dataset: { taskId: t.id }, onclick: () => show(t.id) },
        el("td", {}, el("code", { text: t.id })),
        el("td", {}, el("code", { text: t.contextId || "" })),
        el("td", {}, badge(t.status && t.status.state)),
        el("td", { text: (t.status && t.status.timestamp) || "" }),
        el("td", { text: String((t.artifacts || []).length) })))));
}

async function refresh(taskId) {
  const history = $("#tasks-history").value;
  const params = { id: taskId };
  params.historyLength = history === "" ? 100 : Number(history);
  const answer = await call("GetTask", params);
  if (answer.error) {
    problem = errorText(answer.error);
    renderDetail();
    return;
  }
  apply({ task: answer.result });
  renderDetail();
}

function show(taskId) {
  current = taskId;
  problem = "";
  emit("task-selected", taskId);
  refresh(taskId);
}

function messageView(message) {
  return el("li", { class: `message role-${String(message.role).replace("ROLE_", "").toLowerCase()}` },
    el("span", { class: "who", text: String(message.role).replace("ROLE_", "").toLowerCase() }),
    partsView(message.parts));
}

const renderDetail = coalesce(() => {
  const box = $("#task-detail");
  if (!current) {
    clear(box, el("p", { class: "muted", text: "Pick a task from the list." }));
    return;
  }
  const t = taskModel(current);
  const follow = following && following.taskId === current ? following : null;
  clear(box,
    el("h3", {}, "Task ", el("code", { text: t.id }), " ", badge(t.state)),
    el("p", { class: "muted" }, "context ", el("code", { text: t.contextId })),
    el("div", { class: "actions" },
      el("button", { type: "button", id: "task-refresh", text: "Refresh", onclick: () => refresh(current) }),
      follow && !follow.ended
        ? el("button", { type: "button", id: "task-unsubscribe", text: "Stop following", onclick: stop })
        : el("button", { type: "button", id: "task-subscribe", text: "Subscribe", onclick: subscribe }),
      el("button", { type: "button", id: "task-cancel", text: "Cancel task", onclick: cancel }),
      el("button", { type: "button", text: "Push…", onclick: () => emit("push-for", current) })),
    el("p", { class: "error", id: "task-problem", text: problem }),
    follow ? el("p", { class: "muted", id: "task-following", text: followText(follow) }) : null,
    el("h4", { text: "Status history (as seen by the inspector)" }),
    el("ol", { class: "states", id: "task-states" }, t.statuses.map((s) =>
      el("li", {}, badge(s.state), ` ${s.timestamp || ""} `, el("span", { class: "status-text", text: statusText(s) })))),
    el("h4", { text: `Messages (${t.history.length})` }),
    el("ol", { class: "messages" }, t.history.map(messageView)),
    el("h4", { text: `Artifacts (${t.artifacts.size})` }),
    [...t.artifacts.values()].map((a) => el("div", { class: "artifact" },
      el("strong", { text: a.name || a.artifactId }), partsView(a.segments))),
    el("details", { class: "raw" }, el("summary", { text: "Task as last fetched (JSON)" }), jsonTree(t.raw || null, 1)));
});

function followText(follow) {
  const state = follow.ended ? (follow.error ? `ended: ${errorText(follow.error)}` : "ended") : "following live";
  return `${state}${follow.resubscribes ? ` · reconnected ${follow.resubscribes} time(s)` : ""}`;
}

async function subscribe() {
  if (following && !following.ended) await stop();
  following = { streamId: newId(), taskId: current, resubscribes: 0, ended: false, error: null };
  renderDetail();
  const opened = await openStream(following.streamId, "SubscribeToTask", { id: current });
  if (opened.error) {
    following = null;
    renderDetail();
    problem = errorText(opened.error);
    renderDetail();
  }
}

async function stop() {
  if (following) await api("stop", { streamId: following.streamId });
}

async function cancel() {
  const answer = await call("CancelTask", { id: current });
  if (answer.error) {
    problem = errorText(answer.error);
    renderDetail();
    return;
  }
  apply({ task: answer.result });
  renderDetail();
}

on("stream", (item) => {
  if (!following || item.streamId !== following.streamId) return;
  following.resubscribes = item.resubscribes;
  apply(item.event);
});

on("stream-end", (item) => {
  if (!following || item.streamId !== following.streamId) return;
  following.ended = true;
  following.error = item.error;
  following.resubscribes = item.resubscribes;
  renderDetail();
});

on("task-changed", (model) => { if (model.id === current) renderDetail(); });

export function setupTasks() {
  const states = ["", "submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled", "rejected"];
  clear($("#tasks-status"), states.map((s) => el("option", {
    value: s ? `TASK_STATE_${s.toUpperCase().replaceAll("-", "_")}` : "",
    text: s || "any state",
  })));
  $("#tasks-form").addEventListener("submit", (event) => {
    event.preventDefault();
    pages = [""];
    page = 0;
    list();
  });
  on("show-task", show);
  renderDetail();
}

