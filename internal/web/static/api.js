// The daemon's API, as the app uses it. Every call goes to den's own
// origin with the cookie the login URL set; errors are den's JSON
// errors, thrown as ApiError.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `den answered ${status}`);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, body, headers = {}, signal = undefined) {
  const init = { method, headers: { ...headers }, credentials: "same-origin", signal };
  if (body !== undefined) {
    if (body instanceof FormData) {
      init.body = body;
    } else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "unreachable", "den cannot be reached");
  }
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const err = data && data.error;
    throw new ApiError(resp.status, err && err.code, (err && err.message) || text.slice(0, 200));
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  health: () => call("GET", "/api/v1/health"),
  agents: () => call("GET", "/api/v1/agents"),
  sessions: ({ q = "", agent = "", before = "", limit = 50 } = {}) => {
    const p = new URLSearchParams();
    if (q) p.set("q", q);
    if (agent) p.set("agent", agent);
    if (before) p.set("before", before);
    p.set("limit", String(limit));
    return call("GET", "/api/v1/sessions?" + p);
  },
  createSession: (agent) => call("POST", "/api/v1/sessions", { agent }),
  session: (id, { before = "", limit = 50 } = {}) => {
    const p = new URLSearchParams({ limit: String(limit) });
    if (before) p.set("before", before);
    return call("GET", `/api/v1/sessions/${enc(id)}?` + p);
  },
  deleteSession: (id) => call("DELETE", `/api/v1/sessions/${enc(id)}`),
  patchSession: (id, change) => call("PATCH", `/api/v1/sessions/${enc(id)}`, change),
  send: (id, text, attachments) =>
    call("POST", `/api/v1/sessions/${enc(id)}/messages`, attachments && attachments.length ? { text, attachments } : { text }),
  cancel: (id) => call("POST", `/api/v1/sessions/${enc(id)}/cancel`),
  regenerate: (id, messageID) => call("POST", `/api/v1/sessions/${enc(id)}/messages/${enc(messageID)}/regenerate`, {}),
  edit: (id, messageID, text) => call("POST", `/api/v1/sessions/${enc(id)}/messages/${enc(messageID)}/edit`, { text }),
  branch: (id, messageID) => call("POST", `/api/v1/sessions/${enc(id)}/branch`, { message_id: messageID }),
  approvals: () => call("GET", "/api/v1/approvals"),
  network: (params) => call("GET", "/api/v1/network?" + new URLSearchParams(params)),
  browser: (id) => call("GET", `/api/v1/sessions/${enc(id)}/browser`),
  checkpoints: (id) => call("GET", `/api/v1/sessions/${enc(id)}/checkpoints`),
  changes: (id, checkpoint) => call("GET", `/api/v1/sessions/${enc(id)}/checkpoints/${checkpoint}/changes`),
  restore: (id, checkpoint) => call("POST", `/api/v1/sessions/${enc(id)}/checkpoints/${checkpoint}/restore`),
  skills: (session) => call("GET", "/api/v1/skills?" + new URLSearchParams({ session })),
  // distill answers once the model wrote the draft; signal stops it.
  distill: (id, body, signal) => call("POST", `/api/v1/sessions/${enc(id)}/distill`, body, {}, signal),
  drafts: () => call("GET", "/api/v1/skills/drafts"),
  draft: (agent, name) => call("GET", `/api/v1/skills/drafts/${enc(agent)}/${enc(name)}`),
  // grant: { allow_high, replace }, what the user confirmed.
  installDraft: (agent, name, grant = {}) =>
    call("POST", `/api/v1/skills/drafts/${enc(agent)}/${enc(name)}/install`, grant),
  discardDraft: (agent, name) => call("DELETE", `/api/v1/skills/drafts/${enc(agent)}/${enc(name)}`),
  answer: (approvalID, decision, scope) => call("POST", `/api/v1/approvals/${enc(approvalID)}`, scope ? { decision, scope } : { decision }),
  schedules: (agent = "") => call("GET", "/api/v1/schedules" + (agent ? "?" + new URLSearchParams({ agent }) : "")),
  addSchedule: (job) => call("POST", "/api/v1/schedules", job),
  editSchedule: (id, change) => call("PATCH", `/api/v1/schedules/${enc(id)}`, change),
  deleteSchedule: (id) => call("DELETE", `/api/v1/schedules/${enc(id)}`),
  scheduleAction: (id, action) => call("POST", `/api/v1/schedules/${enc(id)}/${enc(action)}`),
  stopRun: (id, run) => call("POST", `/api/v1/schedules/${enc(id)}/stop?` + new URLSearchParams({ run: String(run) })),
  scheduleRuns: (id, { before = 0, limit = 50 } = {}) => {
    const p = new URLSearchParams({ limit: String(limit) });
    if (before) p.set("before", String(before));
    return call("GET", `/api/v1/schedules/${enc(id)}/runs?` + p);
  },
  attach: (id, files) => {
    const form = new FormData();
    for (const f of files) form.append("file", f, f.name || "pasted");
    return call("POST", `/api/v1/sessions/${enc(id)}/attachments`, form);
  },
};

// follow opens an event stream at path, starting after the event id
// after, and calls onEvent with each event object (its type in .type,
// its id in .event_id). The browser reconnects by itself, sending
// Last-Event-ID, so every event arrives once and in order; when it gives
// up (den answered an error), follow starts again after the last event
// it saw. onState gets "live", "reconnecting" or "closed". extra maps
// the types of events that have no id (device requests) to their
// handlers.
export function follow(path, after, onEvent, onState, extra = {}) {
  let last = after;
  let es = null;
  let stopped = false;
  let retry = null;
  const open = () => {
    const sep = path.includes("?") ? "&" : "?";
    es = new EventSource(last > 0 ? `${path}${sep}after=${last}` : path);
    es.onopen = () => onState && onState("live");
    es.onerror = () => {
      if (stopped) return;
      if (es.readyState === EventSource.CLOSED) {
        onState && onState("reconnecting");
        es.close();
        retry = setTimeout(open, 2000);
      } else {
        onState && onState("reconnecting");
      }
    };
    const handle = (m) => {
      const id = Number(m.lastEventId);
      if (id && id <= last) return; // already seen
      if (id) last = id;
      let data;
      try {
        data = JSON.parse(m.data);
      } catch {
        return;
      }
      onEvent(data);
    };
    for (const type of EVENT_TYPES) es.addEventListener(type, handle);
    for (const [type, fn] of Object.entries(extra)) {
      es.addEventListener(type, (m) => {
        try {
          fn(JSON.parse(m.data));
        } catch {
          /* not JSON: not den's */
        }
      });
    }
  };
  open();
  return {
    close() {
      stopped = true;
      clearTimeout(retry);
      if (es) es.close();
      onState && onState("closed");
    },
    // restart reconnects at once (after a phone woke up, say).
    restart() {
      if (stopped) return;
      clearTimeout(retry);
      if (es) es.close();
      open();
    },
    get last() {
      return last;
    },
  };
}

// EVENT_TYPES are the event types den sends (den run --json's, and the
// daemon's own).
const EVENT_TYPES = [
  "session", "text", "thinking", "tool_call", "tool_result", "usage", "done", "error", "warning",
  "retry", "model", "compaction", "notify", "speech", "open", "status", "message", "queued",
  "approval_request", "approval_resolved", "schedule", "schedule_run", "schedule_delivery", "checkpoint", "restored", "egress",
];
