// Small DOM helpers shared by the panes. Everything an agent sent is put in the page as text
// (textContent), never as HTML, so a card or a message cannot inject markup or script.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the CSP
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export const $ = (selector, root = document) => root.querySelector(selector);

// "TASK_STATE_INPUT_REQUIRED" -> "input-required"
export function stateName(state) {
  if (!state) return "unknown";
  return String(state).replace(/^TASK_STATE_/, "").toLowerCase().replaceAll("_", "-");
}

export const TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);
export const INTERRUPTED = new Set(["input-required", "auth-required"]);

export function badge(state) {
  const name = stateName(state);
  return el("span", { class: `badge state-${name}`, text: name });
}

export function clock(ms) {
  const at = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}.${pad(at.getMilliseconds(), 3)}`;
}

export function bytes(n) {
  if (n === undefined || n === null) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// A JSON value as nested <details>, the first `open` levels unfolded.
export function jsonTree(value, open = 2, key = null) {
  const label = key === null ? [] : [el("span", { class: "json-key", text: key }), ": "];
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return el("div", { class: "json-leaf" }, label, el("span", { class: `json-${kind}`, text: JSON.stringify(value) }));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const shape = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  const node = el("details", { class: "json-node", open: open > 0 }, el("summary", {}, label, el("span", { class: "json-shape", text: shape })));
  // Children are built when first unfolded, so a huge body costs nothing until looked at.
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    for (const [k, v] of entries.slice(0, 2000)) node.append(jsonTree(v, open - 1, k));
    if (entries.length > 2000) node.append(el("div", { class: "json-leaf muted", text: `… ${entries.length - 2000} more` }));
  };
  if (open > 0) build();
  node.addEventListener("toggle", build);
  return node;
}

export function copyButton(label, text) {
  const button = el("button", { type: "button", class: "small", text: label });
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(typeof text === "function" ? text() : text);
      button.textContent = "copied";
    } catch {
      button.textContent = "copy refused";
    }
    setTimeout(() => { button.textContent = label; }, 1200);
  });
  return button;
}

// The parts of a message or artifact: text as text, data as a JSON tree, files as a link.
export function partsView(parts) {
  return el("div", { class: "parts" }, (parts || []).map(partView));
}

export function partView(part) {
  if (part.text !== undefined) return el("pre", { class: "part-text", text: part.text });
  if (part.data !== undefined) return el("div", { class: "part-data" }, jsonTree(part.data, 3));
  const name = part.filename || "file";
  const media = part.mediaType || "application/octet-stream";
  if (part.url !== undefined) return el("div", { class: "part-file", text: `${name} (${media}) at ${part.url}` });
  if (part.raw !== undefined) {
    const link = el("a", { href: "#", text: `${name} (${media}, ${bytes(atob(part.raw).length)})` });
    link.addEventListener("click", (event) => {
      event.preventDefault();
      const data = Uint8Array.from(atob(part.raw), (c) => c.charCodeAt(0));
      const url = URL.createObjectURL(new Blob([data], { type: media }));
      const a = el("a", { href: url, download: name });
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
    return el("div", { class: "part-file" }, link);
  }
  return el("div", { class: "part-other" }, jsonTree(part, 1));
}

// The text of a status message, on one line.
export function statusText(status) {
  const parts = (status.message && status.message.parts) || [];
  return parts.map((p) => p.text || "").join(" ");
}

// Calls `render` at most once per animation frame, however often `schedule` is called.
export function coalesce(render) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; render(); });
  };
}

export function errorText(error) {
  if (!error) return "";
  const code = error.code !== undefined ? ` (${error.code})` : "";
  return `${error.name}${code}: ${error.message}`;
}
