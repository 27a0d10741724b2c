// The Traffic pane: every JSON-RPC request and response and every SSE event, in order, with
// time, size and duration; a selected record shows its headers and body as JSON and copies as
// curl, and names the trace its request carried (W3C traceparent; for a webhook delivery, the
// agent's); a filter narrows the list by
// method, kind, URL or trace id. Only the rows in view are in the page (a virtual list of fixed-height rows), so a stream
// of tens of thousands of events stays responsive; past MAX_RECORDS the oldest are dropped and
// a marker says how many are hidden.

import { on } from "./api.js";
import { $, bytes, clear, clock, coalesce, copyButton, el, errorText, jsonTree } from "./view.js";

// ?traffic-max=N in the page's address lowers the cap (to see the marker without a huge stream).
export const MAX_RECORDS = Number(new URLSearchParams(location.search).get("traffic-max")) || 20_000;
const DROP = Math.max(1, Math.floor(MAX_RECORDS / 4));
const ROW = 22; // px, the row height in inspector.css
const OVERSCAN = 10;

let records = [];
let shown = [];        // records passing the filter
let hidden = 0;        // dropped because of MAX_RECORDS
let lastSeq = 0;
let filter = "";
let selected = null;
const requests = new Map(); // exchange -> request record (for "copy as curl" on any record)

const ARROWS = { request: "→", response: "←", event: "⇠", end: "■", error: "✕", push: "⇢" };

// The trace id of a record's exchange: the one its request's traceparent named.
function traceOf(record) {
  if (record.kind === "push") return record.traceId || ""; // the agent's, if it sent one
  const request = record.kind === "request" ? record : requests.get(record.exchange);
  return (request && request.traceId) || "";
}

function matches(record) {
  if (!filter) return true;
  const hay = `${record.kind} ${summary(record)} ${record.url || ""} ${traceOf(record)}`.toLowerCase();
  return hay.includes(filter);
}

function summary(record) {
  if (record.kind === "request") {
    const id = record.rpcId !== undefined && record.rpcId !== null ? ` #${record.rpcId}` : "";
    return `${record.method} ${record.rpc || record.url}${id}`;
  }
  if (record.kind === "response") return `${record.status} ${record.rpc}${record.error ? ` ${record.error.name}` : ""}`;
  if (record.kind === "event") return `${record.rpc} ${eventKind(record.body)}`;
  if (record.kind === "end") return `${record.rpc} stream ended, ${record.events} events${record.error ? ` (${record.error.name})` : ""}`;
  if (record.kind === "error") return `${record.rpc || ""} ${errorText(record.error)}`;
  if (record.kind === "push") return `webhook ${record.status} ${eventKind({ result: record.body })}`;
  return record.kind;
}

function eventKind(body) {
  const result = body && body.result;
  if (!result) return body && body.error ? `error ${body.error.code}` : "";
  const [kind] = Object.keys(result);
  const status = result.statusUpdate ? result.statusUpdate.status : result.task ? result.task.status : null;
  return status ? `${kind} ${String(status.state).replace("TASK_STATE_", "").toLowerCase()}` : kind || "";
}

function rowFor(record, index) {
  const row = el("div", {
    class: `row kind-${record.kind}${record === selected ? " selected" : ""}${record.error ? " failed" : ""}`,
    dataset: { seq: record.seq, index },
    style: { top: `${index * ROW}px` },
  },
  el("span", { class: "t", text: clock(record.at) }),
  el("span", { class: "k", text: ARROWS[record.kind] || "·" }),
  el("span", { class: "s", text: summary(record) }),
  el("span", { class: "z", text: bytes(record.size) }),
  el("span", { class: "d", text: `${record.elapsed} ms` }));
  row.addEventListener("click", () => select(record));
  return row;
}

const render = coalesce(() => {
  const list = $("#traffic-list");
  const spacer = $("#traffic-spacer");
  const offset = hidden ? 1 : 0;
  spacer.style.height = `${(shown.length + offset) * ROW}px`;
  if ($("#traffic-follow").checked) list.scrollTop = list.scrollHeight;
  const first = Math.max(0, Math.floor(list.scrollTop / ROW) - OVERSCAN);
  const last = Math.min(shown.length + offset, Math.ceil((list.scrollTop + list.clientHeight) / ROW) + OVERSCAN);
  const rows = [];
  for (let i = first; i < last; i++) {
    if (offset && i === 0) {
      rows.push(el("div", { class: "row marker", id: "traffic-hidden", style: { top: "0px" }, text: `${hidden} older events hidden` }));
    } else {
      rows.push(rowFor(shown[i - offset], i));
    }
  }
  clear(spacer, rows);
  $("#traffic-count").textContent = `${records.length + hidden} records${hidden ? ` (${hidden} hidden)` : ""}`;
});

function headersView(headers) {
  if (!headers || !headers.length) return null;
  return el("table", { class: "kv headers" }, headers.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))));
}

function select(record) {
  selected = record;
  render();
  const detail = $("#traffic-detail");
  const request = requests.get(record.exchange);
  const trace = traceOf(record);
  clear(detail,
    el("div", { class: "detail-head" },
      el("strong", { text: `${record.kind} · ${summary(record)}` }),
      el("span", { class: "muted", text: ` ${clock(record.at)} · ${bytes(record.size)} · ${record.elapsed} ms · exchange ${record.exchange}` }),
      request && request.curl ? copyButton("Copy as curl", request.curl) : null,
      copyButton("Copy JSON", () => JSON.stringify(record.body ?? null, null, 2))),
    record.url ? el("div", {}, el("code", { text: record.url })) : null,
    el("div", { class: "trace" }, "trace ",
      trace ? el("code", { class: "trace-id", text: trace }) : el("span", { class: "muted", text: "none (no traceparent)" }),
      trace ? copyButton("Copy trace id", trace) : null),
    record.error ? el("p", { class: "error", text: errorText(record.error) }) : null,
    headersView(record.headers),
    record.body !== undefined && record.body !== null ? jsonTree(record.body, 5) : null);
}

function add(record) {
  if (record.seq <= lastSeq) return; // a resend after the live channel reconnected
  lastSeq = record.seq;
  if (record.kind === "request") requests.set(record.exchange, record);
  records.push(record);
  if (matches(record)) shown.push(record);
  if (records.length > MAX_RECORDS) {
    const dropped = records.splice(0, DROP);
    hidden += dropped.length;
    const gone = new Set(dropped);
    shown = shown.filter((r) => !gone.has(r));
    for (const r of dropped) if (r.kind === "request") requests.delete(r.exchange);
  }
  render();
}

export function setupTraffic() {
  on("traffic", add);
  $("#traffic-list").addEventListener("scroll", () => {
    const list = $("#traffic-list");
    const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - ROW;
    if (!atEnd && $("#traffic-follow").checked && document.activeElement !== $("#traffic-follow")) {
      $("#traffic-follow").checked = false;
    }
    render();
  }, { passive: true });
  $("#traffic-follow").addEventListener("change", render);
  const narrow = (text) => {
    filter = text.trim().toLowerCase();
    shown = records.filter(matches);
    render();
  };
  $("#traffic-filter").addEventListener("input", (event) => narrow(event.target.value));
  on("traffic-trace", (traceId) => {
    $("#traffic-filter").value = traceId;
    narrow(traceId);
  });
  $("#traffic-clear").addEventListener("click", () => {
    hidden += records.length;
    records = [];
    shown = [];
    requests.clear();
    selected = null;
    clear($("#traffic-detail"));
    render();
  });
  render();
}
