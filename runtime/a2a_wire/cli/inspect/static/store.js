// What the page knows about each task, from every source: stream events, GetTask, ListTasks and
// push notifications. A task's status history is the statuses the inspector has seen, in order
// (A2A keeps only the current status on the task). Artifacts are assembled as chunks arrive
// (spec 4.2.2: `append` adds parts to the artifact with the same id, otherwise it is replaced);
// consecutive text parts are merged into one segment so that a long stream stays cheap to show.

import { emit, on } from "./api.js";
import { stateName } from "./view.js";

const tasks = new Map();

export function task(id) {
  if (!tasks.has(id)) {
    tasks.set(id, { id, contextId: "", state: "", statuses: [], artifacts: new Map(), history: [], events: 0 });
  }
  return tasks.get(id);
}

export const known = () => tasks;

function addStatus(model, status) {
  if (!status) return;
  const last = model.statuses[model.statuses.length - 1];
  const messageId = status.message ? status.message.messageId : "";
  const same = last && last.state === status.state && last.timestamp === status.timestamp;
  if (same && last.messageId === messageId) return;
  const timestamp = status.timestamp || "";
  model.statuses.push({ state: status.state, timestamp, message: status.message, messageId });
  model.state = stateName(status.state);
}

function segmentsOf(parts, segments = []) {
  for (const part of parts || []) {
    const last = segments[segments.length - 1];
    if (part.text !== undefined && last && last.text !== undefined) last.text += part.text;
    else segments.push(part.text !== undefined ? { text: part.text } : part);
  }
  return segments;
}

function putArtifact(model, artifact, appendChunk) {
  const known = model.artifacts.get(artifact.artifactId);
  if (appendChunk && known) {
    segmentsOf(artifact.parts, known.segments);
    known.chunks += 1;
    return;
  }
  model.artifacts.set(artifact.artifactId, {
    artifactId: artifact.artifactId,
    name: artifact.name || "",
    description: artifact.description || "",
    segments: segmentsOf(artifact.parts),
    chunks: 1,
  });
}

// Take one StreamResponse (ProtoJSON) into the store; returns the task it touched, if any.
export function apply(event) {
  let model = null;
  if (event.task) {
    const t = event.task;
    model = task(t.id);
    model.raw = t;
    model.contextId = t.contextId || model.contextId;
    addStatus(model, t.status);
    if (t.artifacts) {
      model.artifacts = new Map();
      for (const artifact of t.artifacts) putArtifact(model, artifact, false);
    }
    if (t.history) model.history = t.history;
  } else if (event.statusUpdate) {
    const u = event.statusUpdate;
    model = task(u.taskId);
    model.contextId = u.contextId || model.contextId;
    addStatus(model, u.status);
  } else if (event.artifactUpdate && event.artifactUpdate.artifact) {
    const u = event.artifactUpdate;
    model = task(u.taskId);
    model.contextId = u.contextId || model.contextId;
    putArtifact(model, u.artifact, Boolean(u.append));
  }
  if (model) {
    model.events += 1;
    emit("task-changed", model);
  }
  return model;
}

on("push", (item) => apply(item.event));
