// The inspector page: tabs, the agent URL form, the live channel, and each pane's setup.

import { api, connectLive, on } from "./api.js";
import { showCard } from "./card.js";
import { identityText } from "./identity.js";
import { setupConversation } from "./conversation.js";
import { setupPush } from "./push.js";
import { setupTasks } from "./tasks.js";
import { setupTraffic } from "./traffic.js";
import { $, errorText } from "./view.js";

function showPane(name) {
  for (const tab of document.querySelectorAll("#tabs button")) {
    const active = tab.dataset.pane === name;
    tab.classList.toggle("active", active);
    tab.setAttribute("aria-selected", String(active));
    $(`#pane-${tab.dataset.pane}`).hidden = !active;
  }
}

async function open(url) {
  $("#agent-status").textContent = "opening…";
  document.body.dataset.agent = "opening";
  const view = await api("connect", { url });
  if (view.error && !view.cardUrl) {
    $("#agent-status").textContent = errorText(view.error);
    document.body.dataset.agent = "failed";
    return;
  }
  showCard(view);
  document.body.dataset.agent = view.interface ? "ready" : "unusable";
}

async function start() {
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.addEventListener("click", () => showPane(tab.dataset.pane));
  }
  on("push-for", () => showPane("push"));
  on("show-pane", showPane);
  setupTraffic();
  setupConversation();
  setupTasks();
  $("#connect-form").addEventListener("submit", (event) => {
    event.preventDefault();
    open($("#agent-url").value.trim());
  });
  connectLive((status) => {
    $("#live-status").textContent = status;
    document.body.dataset.live = status;
  });
  const state = await api("state");
  if (state.error) {
    $("#agent-status").textContent = errorText(state.error);
    return;
  }
  setupPush(state.webhook);
  $("#credential").textContent = identityText(state.identity);
  showPane("card");
  if (state.agent) {
    $("#agent-url").value = state.agent.url;
    showCard(state.agent);
    document.body.dataset.agent = state.agent.interface ? "ready" : "unusable";
  } else if (state.initialUrl) {
    $("#agent-url").value = state.initialUrl;
    await open(state.initialUrl);
  } else {
    showCard(null);
  }
}

start();
