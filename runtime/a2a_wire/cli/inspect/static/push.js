// The Push pane: push configs pointing at the inspector's own webhook (spec 3.1.7-3.1.10), and
// each notification as it arrives (spec 4.3.3).

import { api, call, on } from "./api.js";
import { $, badge, clear, clock, el, errorText, jsonTree } from "./view.js";

let received = 0;

function taskId() {
  return $("#push-task").value.trim();
}

function problem(error) {
  $("#push-problem").textContent = error ? errorText(error) : "";
}

async function create() {
  problem(null);
  const answer = await api("push", { taskId: taskId() });
  if (answer.error) return problem(answer.error);
  clear($("#push-created"), el("p", { text: "Created:" }), jsonTree(answer.result, 2));
  await listConfigs();
}

async function listConfigs() {
  problem(null);
  const answer = await call("ListTaskPushNotificationConfigs", { taskId: taskId() });
  if (answer.error) return problem(answer.error);
  const configs = answer.result.configs || [];
  clear($("#push-configs"),
    configs.length ? null : el("p", { class: "muted", text: "No push configs for this task." }),
    el("ul", {}, configs.map((c) => el("li", { class: "push-config" },
      el("code", { text: c.id }), " → ", el("code", { text: c.url }), " ",
      el("button", { type: "button", class: "small", text: "Delete", onclick: () => remove(c) })))));
}

async function remove(config) {
  const answer = await call("DeleteTaskPushNotificationConfig", { taskId: config.taskId, id: config.id });
  if (answer.error) return problem(answer.error);
  await listConfigs();
}

function summary(event) {
  const state = (status) => badge(status && status.state);
  const update = event.statusUpdate;
  if (update) return [el("code", { text: update.taskId }), " status ", state(update.status)];
  if (event.task) return [el("code", { text: event.task.id }), " task ", state(event.task.status)];
  const chunk = event.artifactUpdate;
  if (chunk) {
    const artifact = chunk.artifact || {};
    return [el("code", { text: chunk.taskId }), ` artifact ${artifact.name || artifact.artifactId || ""}`];
  }
  if (event.message) return ["message"];
  return [Object.keys(event)[0] || "?"];
}

on("push", (item) => {
  received += 1;
  $("#push-count").textContent = `${received} notification${received === 1 ? "" : "s"} received`;
  $("#push-events").prepend(el("li", { class: "push-event" },
    el("details", {}, el("summary", {}, el("span", { class: "t", text: clock(Date.now()) }), " ", ...summary(item.event)),
      jsonTree(item.event, 3))));
});

on("push-for", (id) => { $("#push-task").value = id; });
on("task-selected", (id) => { if (!taskId()) $("#push-task").value = id; });

export function setupPush(webhook) {
  $("#push-webhook").textContent = webhook;
  $("#push-form").addEventListener("submit", (event) => { event.preventDefault(); create(); });
  $("#push-list").addEventListener("click", listConfigs);
}
