// The Card pane: the agent card as fetched, the findings, capabilities, skills, media types,
// the security schemes and the identity the inspector presents (identity.js), and the extended
// card when the credential allows it.

import { api, emit } from "./api.js";
import { identityText, identityView } from "./identity.js";
import { $, clear, el, errorText, jsonTree } from "./view.js";

const LEVELS = { error: "✕", warning: "!", info: "i", ok: "✓" };

function findingsView(findings) {
  if (!findings.length) return el("p", { class: "muted", text: "Nothing to report." });
  return el("ul", { class: "findings" }, findings.map((f) =>
    el("li", { class: `finding finding-${f.level}`, dataset: { level: f.level } },
      el("span", { class: "level", text: LEVELS[f.level] || "?" }),
      f.where ? el("code", { class: "where", text: f.where }) : null,
      el("span", { class: "text", text: f.text }))));
}

function yesNo(value) {
  return el("span", { class: value === true ? "yes" : "no", text: value === true ? "yes" : value === false ? "no" : "not said" });
}

function capabilitiesView(caps) {
  caps = caps && typeof caps === "object" ? caps : {};
  const rows = [
    ["streaming", yesNo(caps.streaming)],
    ["push notifications", yesNo(caps.pushNotifications)],
    ["extended card", yesNo(caps.extendedAgentCard)],
  ];
  for (const ext of Array.isArray(caps.extensions) ? caps.extensions : []) {
    rows.push([`extension${ext.required ? " (required)" : ""}`, el("code", { text: String(ext.uri) })]);
  }
  return el("table", { class: "kv" }, rows.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", {}, v))));
}

const list = (value) => (Array.isArray(value) && value.length ? value.join(", ") : "");

function skillsView(card) {
  const skills = Array.isArray(card.skills) ? card.skills : [];
  if (!skills.length) return el("p", { class: "muted", text: "No skills listed." });
  const head = el("tr", {}, ["id", "name", "description", "tags", "input", "output"].map((h) => el("th", { text: h })));
  return el("table", { class: "grid skills" }, head, skills.map((s) =>
    el("tr", {},
      el("td", {}, el("code", { text: String(s.id ?? "") })),
      el("td", { text: String(s.name ?? "") }),
      el("td", { text: String(s.description ?? "") }),
      el("td", { text: list(s.tags) }),
      el("td", { text: list(s.inputModes) || `(default) ${list(card.defaultInputModes)}` }),
      el("td", { text: list(s.outputModes) || `(default) ${list(card.defaultOutputModes)}` }))));
}

function summaryView(view) {
  const card = view.document && typeof view.document === "object" ? view.document : {};
  const iface = view.interface;
  const row = (name, value) => el("tr", {}, el("th", { text: name }), el("td", {}, value));
  const provider = card.provider && `${card.provider.organization || ""} ${card.provider.url || ""}`;
  const endpoint = iface
    ? el("code", { text: iface.url + (iface.tenant ? ` (tenant ${iface.tenant})` : "") })
    : el("span", { class: "no", text: "no usable interface" });
  return el("div", { class: "card-summary" },
    el("h2", { text: String(card.name || "(no name)") }),
    el("p", { text: String(card.description || "") }),
    el("table", { class: "kv" },
      row("version", String(card.version ?? "")),
      provider ? row("provider", provider) : null,
      row("card", el("code", { text: view.cardUrl })),
      row("JSON-RPC", endpoint)));
}

function extendedView(view) {
  const box = el("div", { id: "extended-card" });
  const caps = view.document && view.document.capabilities;
  const button = el("button", { type: "button", id: "fetch-extended", text: "Fetch extended card", disabled: !view.interface });
  const render = (extended) => {
    if (extended.error) {
      clear(box, button, el("p", { class: "error", id: "extended-error", text: errorText(extended.error) }));
      return;
    }
    clear(box, button,
      el("h3", { text: "Extended card" }),
      findingsView(extended.findings),
      el("h4", { text: "Skills" }), skillsView(extended.document),
      el("details", { class: "raw" }, el("summary", { text: "JSON (as decoded)" }), jsonTree(extended.document, 2)));
    emit("card-skills", extended.document.skills || []);
  };
  button.addEventListener("click", async () => render(await api("extended", {})));
  const note = caps && caps.extendedAgentCard ? "The card offers an extended card." : "The card does not offer an extended card.";
  append(box, button, el("span", { class: "muted", text: ` ${note}` }));
  if (view.extended) render(view.extended);
  return box;
}

function append(node, ...children) {
  node.append(...children);
  return node;
}

export function showCard(view) {
  const pane = $("#card-body");
  if (!view) {
    clear(pane, el("p", { class: "muted", text: "Open an agent by its URL above." }));
    return;
  }
  const findings = view.findings || [];
  const errors = findings.filter((f) => f.level === "error").length;
  const warnings = findings.filter((f) => f.level === "warning").length;
  $("#agent-status").textContent = view.error && !view.document
    ? errorText(view.error)
    : `${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`;
  if (!view.document) {
    clear(pane, el("p", { class: "error", id: "card-error", text: `Could not read the card at ${view.cardUrl}: ${errorText(view.error)}` }));
    return;
  }
  const card = typeof view.document === "object" && view.document ? view.document : {};
  if (view.identity) $("#credential").textContent = identityText(view.identity);
  clear(pane,
    summaryView(view),
    view.error ? el("p", { class: "error", id: "card-error", text: `Calls are not possible: ${errorText(view.error)}` }) : null,
    el("h3", { text: `Findings (${errors} errors, ${warnings} warnings)` }),
    findingsView(findings),
    el("h3", { text: "Capabilities" }), capabilitiesView(card.capabilities),
    el("h3", { text: "Skills" }), skillsView(card),
    identityView(view),
    el("h3", { text: "Default media types" }),
    el("p", {},
      "in: ", el("code", { text: list(card.defaultInputModes) || "none" }),
      "  out: ", el("code", { text: list(card.defaultOutputModes) || "none" })),
    extendedView(view),
    el("details", { class: "raw", open: true }, el("summary", { text: "JSON (as received)" }), jsonTree(view.document, 1)));
  emit("card-skills", Array.isArray(card.skills) ? card.skills : []);
}
