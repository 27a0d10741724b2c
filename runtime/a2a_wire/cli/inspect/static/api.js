// The page's only contact with the world: the inspector's API, under the page's own URL (whose
// first path segment is the per-run token, so relative URLs carry it), and its live channel.

export async function api(path, body) {
  const init = body === undefined
    ? {}
    : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let response;
  try {
    response = await fetch(`api/${path}`, init);
  } catch (exc) {
    return { error: { name: "InspectorUnreachable", message: String(exc) } };
  }
  try {
    return await response.json();
  } catch {
    return { error: { name: "InspectorError", message: `HTTP ${response.status}` } };
  }
}

// One non-streaming operation: { result } or { error }.
export const call = (method, params) => api("call", { method, params });

// Start a stream under the page's own id (its events may come before the answer does):
// { streamId } or { error }; its events come as "stream" items on the bus.
export const openStream = (streamId, method, params) => api("stream", { method, params, streamId });

// A tiny event bus: the live channel's items and the panes' own notices.
const listeners = new Map();

export function on(kind, listener) {
  if (!listeners.has(kind)) listeners.set(kind, new Set());
  listeners.get(kind).add(listener);
}

export function emit(kind, item) {
  for (const listener of listeners.get(kind) || []) listener(item);
}

export function connectLive(onStatus) {
  const source = new EventSource("api/live");
  for (const kind of ["traffic", "stream", "stream-end", "push"]) {
    source.addEventListener(kind, (event) => emit(kind, JSON.parse(event.data)));
  }
  source.addEventListener("ready", () => onStatus("live"));
  source.addEventListener("error", () => onStatus(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"));
  return source;
}

export function newId() {
  return crypto.randomUUID();
}
