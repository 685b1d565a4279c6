// den's web face: the sessions, a chat with the agent, and its
// approvals. State comes from the API; a session's events come over
// Server-Sent Events, resumed with Last-Event-ID, so a reload, a tab
// switch or a phone that slept shows every event once.
import { h, render as mount, Component } from "preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState, useCallback } from "preact/hooks";
import htm from "htm";
import { api, follow, ApiError } from "/app/api.js";
import { render as markdown, highlight, linkPaths, resources } from "/app/markdown.js";
import { Files } from "/app/files.js";
import { Terminal } from "/app/terminal.js";
import { BrowserView } from "/app/browser.js";
import { Settings } from "/app/settings.js";
import { Schedules } from "/app/schedules.js";
import { Distill } from "/app/distill.js";
import { handleDeviceRequest, handleDeviceDone, DevicePrompts } from "/app/device.js";
import { pushState } from "/app/push.js";

const html = htm.bind(h);

// Icons, drawn inline so that no font has to have the glyph.
const icon = (d) => html`<svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true" focusable="false"
  fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d=${d} /></svg>`;
const ICONS = {
  menu: "M4 6h16M4 12h16M4 18h16",
  attach: "M21 11.5 12.5 20a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8-8",
  send: "M4 12 20 4l-6 16-3-7z",
  stop: "M7 7h10v10H7z",
  files: "M3 7a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2z",
  terminal: "M4 5h16v14H4zM7 9l3 3-3 3M12 15h5",
  browser: "M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18zM3 12h18M12 3c3 3 3 15 0 18M12 3c-3 3-3 15 0 18",
  close: "M6 6l12 12M18 6 6 18",
  memory: "M9 4a3 3 0 0 0-3 3v.5A3 3 0 0 0 4 10.5a3 3 0 0 0 1 2.2A3 3 0 0 0 6 18a3 3 0 0 0 3 2 3 3 0 0 0 3-3V7a3 3 0 0 0-3-3zM15 4a3 3 0 0 1 3 3v.5a3 3 0 0 1 2 3 3 3 0 0 1-1 2.2A3 3 0 0 1 18 18a3 3 0 0 1-3 2 3 3 0 0 1-3-3",
  more: "M4 12a1.5 1.5 0 1 0 3 0 1.5 1.5 0 1 0-3 0M10.5 12a1.5 1.5 0 1 0 3 0 1.5 1.5 0 1 0-3 0M17 12a1.5 1.5 0 1 0 3 0 1.5 1.5 0 1 0-3 0",
  clock: "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18zM12 7v5l3 3",
  settings: "M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z",
};
const desktop = () => window.matchMedia("(pointer: fine)").matches;
// BROWSER_TOOL is the model's tool that uses its browser.
const BROWSER_TOOL = "browser_use";

// ---------------------------------------------------------------- the app

function App() {
  const [agents, setAgents] = useState([]);
  const [agent, setAgent] = useState(localStorage.getItem("den.agent") || "default");
  const [sessions, setSessions] = useState([]);
  const [query, setQuery] = useState("");
  const [current, setCurrent] = useState(() => location.hash.slice(1) || "");
  const [drawer, setDrawer] = useState(false);
  const [conn, setConn] = useState("live");
  const [error, setError] = useState("");
  const [panel, setPanel] = useState(null); // "files", "terminal", "browser" or null
  const [settings, setSettings] = useState(false);
  const [schedules, setSchedules] = useState(false);
  const [more, setMore] = useState(false); // the open chat's menu
  const [distill, setDistill] = useState(false); // the open chat's Make a skill sheet
  const [toasts, setToasts] = useState([]);
  const [memory, setMemory] = useState(null); // the open chat's memory: {on, set}
  const [browserOn, setBrowserOn] = useState(false); // the open chat's agent has a browser to show

  const loadSessions = useCallback(async () => {
    try {
      const r = await api.sessions({ q: query, agent });
      setSessions(r.sessions || []);
    } catch (e) {
      setError(message(e));
    }
  }, [query, agent]);

  useEffect(() => {
    api.agents().then((r) => setAgents(r.agents || []), (e) => setError(message(e)));
  }, []);
  useEffect(() => {
    const t = setTimeout(loadSessions, query ? 200 : 0);
    return () => clearTimeout(t);
  }, [loadSessions]);
  useEffect(() => localStorage.setItem("den.agent", agent), [agent]);

  // The sidebar follows every session's status; this page is also a
  // device (host commands reach it) and says when the user uses it.
  const reloadList = useRef(loadSessions);
  reloadList.current = loadSessions;
  const currentRef = useRef(current);
  currentRef.current = current;
  useEffect(() => {
    let refresh = null;
    const toast = (t) => {
      setToasts((list) => [...list.slice(-2), t]);
      setTimeout(() => setToasts((list) => list.filter((x) => x !== t)), 8000);
    };
    const presence = watchPresence();
    const f = follow(`/api/v1/events?device=1&client=${CLIENT}`, 0, (e) => {
      if (e.type === "status") {
        setSessions((list) => list.map((s) => (s.id === e.session_id ? { ...s, status: e.status } : s)));
      }
      if (e.type === "message" || e.type === "session") {
        clearTimeout(refresh);
        refresh = setTimeout(() => reloadList.current(), 300);
      }
      if (e.type === "notify") {
        // den-notify: a notification of the system when the page is
        // hidden, a note on the page when it is seen.
        notify(e.title || "den", e.message || "", `notify-${e.event_id}`);
        toast({ id: e.event_id, title: e.title, message: e.message });
      }
      if (e.type === "approval_request") {
        notify("den needs your approval", e.question || e.command, `approval-${e.id}`);
        // One in another session than the open one is easy to miss.
        if (e.session_id !== currentRef.current) toast({ id: e.event_id, title: "Approval needed:", message: e.question || e.command, session: e.session_id });
      }
      if (e.type === "status" && e.status === "idle") notify("den is done", "", `done-${e.session_id}`);
      if (e.type === "schedule_delivery" && (e.status === "pending" || e.status === "failed")) {
        // A scheduled job's answer, failure or missed runs; or a
        // delivery of one that failed for good.
        const title = e.status === "failed" ? `den could not deliver “${e.title}”` : e.title;
        const body = e.status === "failed" ? e.error : e.body;
        if (e.status === "pending") notify(title, body, e.session ? `done-${e.session}` : `schedule-${e.delivery_id}`);
        toast({ id: e.event_id, title: title + ":", message: body, session: e.session || undefined });
      }
    }, (state) => {
      setConn(state);
      if (state === "live") presence.again();
    }, { device_request: handleDeviceRequest, device_done: handleDeviceDone });
    return () => {
      presence.stop();
      f.close();
    };
  }, []);

  // Another chat closes the menu and the sheet of this one.
  useEffect(() => {
    setMore(false);
    setDistill(false);
  }, [current]);
  useEffect(() => {
    if (!more) return;
    const onKey = (e) => e.key === "Escape" && setMore(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [more]);

  useEffect(() => {
    const onHash = () => setCurrent(location.hash.slice(1));
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  const open = (id) => {
    location.hash = id;
    setCurrent(id);
    setDrawer(false);
    setPanel(null);
  };
  const newChat = async () => {
    try {
      const s = await api.createSession(agent);
      setSessions((list) => [s, ...list]);
      open(s.id);
      setTimeout(() => document.querySelector("#composer")?.focus(), 0);
    } catch (e) {
      setError(message(e));
    }
  };

  // Keyboard shortcuts on a desktop: Ctrl/⌘+K searches, Ctrl/⌘+Shift+O
  // starts a new chat, Escape stops a turn (handled by the chat).
  useEffect(() => {
    const onKey = (e) => {
      const mod = e.ctrlKey || e.metaKey;
      if (mod && e.key.toLowerCase() === "k") {
        e.preventDefault();
        document.querySelector("#search")?.focus();
      } else if (mod && e.shiftKey && e.key.toLowerCase() === "o") {
        e.preventDefault();
        newChat();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });

  return html`
    <div class=${"shell" + (drawer ? " drawer-open" : "")}>
      <aside class="sidebar" aria-label="Sessions">
        <div class="sidebar-top">
          <button class="primary" onClick=${newChat}>New chat</button>
          <label class="visually-hidden" for="agent">Agent</label>
          <select id="agent" aria-label="Agent" value=${agent} onChange=${(e) => setAgent(e.target.value)}>
            ${(agents.length ? agents : [{ name: "default" }]).map((a) => html`<option value=${a.name}>${a.name}</option>`)}
          </select>
        </div>
        <input id="search" type="search" placeholder="Search" aria-label="Search sessions" value=${query}
          onInput=${(e) => setQuery(e.target.value)} />
        <button class="settings-open" onClick=${() => { setSettings(true); setDrawer(false); }}>${icon(ICONS.settings)} Settings</button>
        <button class="settings-open schedules-open" onClick=${() => { setSchedules(true); setDrawer(false); }}>${icon(ICONS.clock)} Schedules</button>
        <ul class="sessions">
          ${nestSessions(sessions).map(({ s, depth }) => html`
            <li key=${s.id} class=${depth ? "sub" : undefined} style=${depth ? `--depth: ${depth}` : undefined}>
              <a href=${"#" + s.id} class=${s.id === current ? "current" : ""} aria-current=${s.id === current ? "page" : undefined}
                title=${depth ? `Sub-agent${s.profile ? " (" + s.profile + ")" : ""}` : undefined}
                onClick=${(e) => { e.preventDefault(); open(s.id); }}>
                ${depth > 0 && html`<span class="sub-mark" aria-label="sub-agent">↳</span>`}
                <span class="title">${s.title || "New chat"}</span>
                ${badge(s.status)}
              </a>
            </li>`)}
          ${sessions.length === 0 && html`<li class="empty">${query ? "Nothing found." : "No chats yet."}</li>`}
        </ul>
      </aside>
      <div class="scrim" onClick=${() => setDrawer(false)} aria-hidden="true"></div>
      <${DevicePrompts} onError=${setError} />
      <div class="toasts" role="status" aria-live="polite">
        ${toasts.map((t) => html`<div class="toast" key=${t.id}><strong>${t.title}</strong> ${t.message}
          ${t.session && html`<button class="link" onClick=${() => { setToasts((list) => list.filter((x) => x !== t)); open(t.session); }}>Open</button>`}
          <button class="link" onClick=${() => setToasts((list) => list.filter((x) => x !== t))}>Dismiss</button></div>`)}
      </div>
      <main class="main">
        <header class="topbar">
          <button class="icon menu" aria-label="Sessions" onClick=${() => setDrawer(!drawer)}>${icon(ICONS.menu)}</button>
          <h1>${(sessions.find((s) => s.id === current) || {}).title || "den"}</h1>
          ${conn !== "live" && html`<span class="conn" role="status">${conn === "reconnecting" ? "Reconnecting…" : "Offline"}</span>`}
          ${current && memory && html`
            <button class=${"icon" + (memory.on ? " on" : "")} aria-label="Memory" aria-pressed=${memory.on}
              title=${memory.on ? "Memory is on for this chat (/memory turns it off)" : "Memory is off for this chat (/memory turns it on)"}
              onClick=${() => memory.set(!memory.on).catch((e) => setError(message(e)))}>${icon(ICONS.memory)}</button>`}
          ${current && html`
            <button class=${"icon" + (panel === "files" ? " on" : "")} aria-label="Files" aria-pressed=${panel === "files"}
              onClick=${() => setPanel(panel === "files" ? null : "files")}>${icon(ICONS.files)}</button>
            <button class=${"icon" + (panel === "terminal" ? " on" : "")} aria-label="Terminal" aria-pressed=${panel === "terminal"}
              onClick=${() => setPanel(panel === "terminal" ? null : "terminal")}>${icon(ICONS.terminal)}</button>`}
          ${current && (browserOn || panel === "browser") && html`
            <button class=${"icon" + (panel === "browser" ? " on" : "")} aria-label="Browser" aria-pressed=${panel === "browser"}
              title="The agent's browser: watch it, take it over" onClick=${() => setPanel(panel === "browser" ? null : "browser")}>${icon(ICONS.browser)}</button>`}
          ${current && html`
            <div class="more">
              <button class=${"icon" + (more ? " on" : "")} aria-label="More" aria-haspopup="menu" aria-expanded=${more}
                onClick=${() => setMore(!more)}>${icon(ICONS.more)}</button>
              ${more && html`<div class="menu-scrim" onClick=${() => setMore(false)} aria-hidden="true"></div>
                <div class="menu-pop" role="menu" aria-label="This chat">
                  <button role="menuitem" onClick=${() => { setMore(false); setDistill(true); }}>Make a skill</button>
                </div>`}
            </div>`}
        </header>
        ${error && html`<div class="banner error" role="alert">${error} <button class="link" onClick=${() => setError("")}>Dismiss</button></div>`}
        ${settings && html`<div class="settings-layer"><${Settings} onError=${setError} onClose=${() => setSettings(false)}
          onOpen=${(sid) => { setSettings(false); open(sid); }} /></div>`}
        ${schedules && html`<div class="settings-layer"><${Schedules} agent=${agent} agents=${agents} onError=${setError}
          onClose=${() => setSchedules(false)} onOpen=${(sid) => { setSchedules(false); open(sid); }} /></div>`}
        ${distill && current && html`<div class="settings-layer"><${Distill} key=${current} id=${current}
          onClose=${() => setDistill(false)} onOpen=${(sid) => { setDistill(false); open(sid); }} /></div>`}
        ${current
          ? html`<${Chat} key=${current} id=${current} onError=${setError} onTitle=${loadSessions} panel=${panel} setPanel=${setPanel}
              onMemory=${setMemory} onBrowser=${setBrowserOn} />`
          : html`<div class="welcome"><p>Start a chat with your agent, or pick one from the list.</p>
              <button class="primary" onClick=${newChat}>New chat</button></div>`}
      </main>
    </div>`;
}

// nestSessions puts each sub-agent session right under the session
// that started it (oldest first) when that one is listed too.
function nestSessions(list) {
  const ids = new Set(list.map((s) => s.id));
  const kids = new Map();
  for (const s of list) if (s.parent && ids.has(s.parent)) kids.set(s.parent, [...(kids.get(s.parent) || []), s]);
  const out = [];
  const add = (s, depth) => {
    out.push({ s, depth });
    for (const k of (kids.get(s.id) || []).sort((a, b) => a.created.localeCompare(b.created))) add(k, depth + 1);
  };
  for (const s of list) if (!s.parent || !ids.has(s.parent)) add(s, 0);
  return out;
}

function badge(status) {
  if (status === "waiting") return html`<span class="badge waiting" title="Waiting for your approval">approval</span>`;
  if (status === "running") return html`<span class="badge running" title="Running">●</span>`;
  if (status === "queued") return html`<span class="badge running" title="Queued">queued</span>`;
  if (status === "error") return html`<span class="badge error" title="Stopped with an error">!</span>`;
  if (status === "interrupted") return html`<span class="badge error" title="Interrupted">interrupted</span>`;
  return null;
}

function message(e) {
  if (e instanceof ApiError) return e.message;
  return String(e && e.message ? e.message : e);
}

// notify shows a notification of the system while the page is hidden,
// unless this browser has Web Push on (den's push says the same, with
// the same tag). A tag names what it is about, so a newer one replaces
// an older one.
function notify(title, body, tag) {
  if (!document.hidden || pushOn || !("Notification" in window) || Notification.permission !== "granted") return;
  try {
    new Notification(title, { body, tag, icon: "/app/icon.svg" });
  } catch {
    /* some browsers only notify from a service worker */
  }
}

// pushOn says whether this browser has Web Push on; Settings says when
// it changes.
let pushOn = false;
const checkPush = () => pushState().then((s) => (pushOn = s === "on"), () => {});
checkPush();
window.addEventListener("den-push", checkPush);

// CLIENT is this page's id on its device stream.
const CLIENT = (crypto.randomUUID ? crypto.randomUUID() : Math.random().toString(36).slice(2) + Date.now().toString(36)).replace(/[^A-Za-z0-9_-]/g, "");

// watchPresence tells den whether the user is using den on this page:
// the page is in front and they touched, typed or scrolled within the
// last half minute. While someone is, den's Web Push stays quiet. It
// says so again at most every 30 seconds while the user acts, and den
// lets the word lapse after 90, so a computer left with den in front
// does not hold the phone's notifications back.
function watchPresence() {
  let active = false;
  let said = 0;
  const say = (a) => fetch("/api/v1/device/presence", {
    method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client: CLIENT, active: a }),
  }).catch(() => {});
  const act = () => {
    if (document.hidden || !document.hasFocus()) return;
    const now = Date.now();
    if (active && now - said < 30000) return;
    active = true;
    said = now;
    say(true);
  };
  const away = () => {
    if (!active) return;
    active = false;
    say(false);
  };
  const onVisible = () => (document.hidden ? away() : act());
  // The window's own focus and blur, not its elements' (which reach a
  // capturing listener on the window too).
  const onFocus = (e) => e.target === window && act();
  const onBlur = (e) => e.target === window && away();
  const events = [["pointerdown", act], ["keydown", act], ["wheel", act], ["touchmove", act]];
  for (const [name, fn] of events) window.addEventListener(name, fn, { passive: true, capture: true });
  window.addEventListener("focus", onFocus);
  window.addEventListener("blur", onBlur);
  document.addEventListener("visibilitychange", onVisible);
  return {
    // again says it anew (den forgets a page whose stream reconnected).
    again() {
      said = 0;
      if (active) {
        active = false;
        act();
      }
    },
    stop() {
      for (const [name, fn] of events) window.removeEventListener(name, fn, { capture: true });
      window.removeEventListener("focus", onFocus);
      window.removeEventListener("blur", onBlur);
      document.removeEventListener("visibilitychange", onVisible);
    },
  };
}

// ---------------------------------------------------------------- a chat

// live is what the running turn streamed since its last committed
// message: segments of text, thinking and tool calls in order.
function useSession(id, onError) {
  const [sess, setSess] = useState(null);
  const [messages, setMessages] = useState([]);
  const [more, setMore] = useState(false);
  const [queued, setQueued] = useState([]);
  const [live, setLive] = useState([]);
  const [approvals, setApprovals] = useState([]);
  const [status, setStatus] = useState("idle");
  const [failure, setFailure] = useState("");
  const [request, setRequest] = useState(null); // the last request's input tokens by part
  const [egress, setEgress] = useState([]); // the computer's connections, newest first
  const calls = useRef(new Map()); // call id → what its events said (labels, output, duration, exit code)
  const [tick, bump] = useState(0); // bumped when a call's facts change
  const [browserTick, bumpBrowser] = useState(0); // bumped when a browser_use call ends
  const [checkpoints, setCheckpoints] = useState(new Map()); // message id → the checkpoint before its calls
  const stream = useRef(null);

  // loadCheckpoints reads the session's checkpoints (undo in the
  // computer): a turn that had one shows what it changed.
  const loadCheckpoints = useCallback(async () => {
    const r = await api.checkpoints(id);
    const m = new Map();
    for (const c of r.checkpoints || []) if (c.message_id) m.set(c.message_id, c);
    setCheckpoints(m);
  }, [id]);

  const reload = useCallback(async (uptoEvent) => {
    const r = await api.session(id);
    setSess(r);
    setMessages(r.messages || []);
    setMore(!!r.more);
    setQueued(r.queued || []);
    setStatus(r.status);
    if (r.last_request && Object.keys(r.last_request).length) setRequest(r.last_request);
    // What is committed now is in the messages: keep only what came
    // after the event that said so.
    if (uptoEvent !== undefined) setLive((segs) => segs.filter((s) => s.event > uptoEvent));
    return r;
  }, [id]);

  const loadApprovals = useCallback(async () => {
    const r = await api.approvals();
    setApprovals((r.approvals || []).filter((a) => a.session_id === id));
  }, [id]);

  const loadEgress = useCallback(async () => {
    const r = await api.network({ session: id, limit: MAX_CONNECTIONS });
    setEgress(r.connections || []);
  }, [id]);

  useEffect(() => {
    let closed = false;
    let pendingReload = null;
    setLive([]);
    setEgress([]);
    calls.current = new Map();
    setCheckpoints(new Map());
    (async () => {
      let r;
      try {
        r = await reload();
        await loadApprovals();
        await loadEgress();
        await loadCheckpoints();
      } catch (e) {
        onError(message(e));
        return;
      }
      if (closed) return;
      const running = r.status === "running" || r.status === "waiting" || r.status === "queued";
      const after = running ? r.resume_event_id : r.last_event_id;
      stream.current = follow(`/api/v1/sessions/${encodeURIComponent(id)}/events`, after, (e) => {
        const ev = e.event_id;
        switch (e.type) {
          case "text":
          case "thinking":
            setLive((segs) => {
              const last = segs[segs.length - 1];
              if (last && last.kind === e.type) {
                return [...segs.slice(0, -1), { ...last, text: last.text + e.text, event: ev }];
              }
              return [...segs, { kind: e.type, text: e.text, event: ev }];
            });
            break;
          case "retry":
            // A retried request's text is void: the next attempt
            // streams the answer again.
            setLive((segs) => segs.filter((s) => s.kind === "tool"));
            break;
          case "tool_call":
            calls.current.set(e.id, { ...(calls.current.get(e.id) || {}), name: e.name, labels: e.labels, running: true });
            bump((n) => n + 1);
            setLive((segs) => [...segs, { kind: "tool", id: e.id, name: e.name, input: e.input, event: ev }]);
            break;
          case "tool_result":
            calls.current.set(e.id, { ...(calls.current.get(e.id) || {}), running: false, output: e.output, is_error: e.is_error,
              duration_ms: e.duration_ms, exit_code: e.exit_code });
            bump((n) => n + 1);
            if ((calls.current.get(e.id) || {}).name === BROWSER_TOOL) bumpBrowser((n) => n + 1);
            break;
          case "message":
            clearTimeout(pendingReload);
            pendingReload = setTimeout(() => reload(ev).catch((err) => onError(message(err))), 0);
            break;
          case "queued":
            setQueued((q) => [...q, { message_id: e.message_id, text: e.text }]);
            break;
          case "usage":
            if (e.breakdown) setRequest(e.breakdown);
            break;
          case "status":
            setStatus(e.status);
            if (e.status === "running") setFailure("");
            if (e.status === "idle" || e.status === "error" || e.status === "interrupted") {
              reload(ev).catch(() => {});
            }
            break;
          case "error":
            setFailure(e.message || "the turn failed");
            break;
          case "approval_request":
            setApprovals((list) => (list.some((a) => a.id === e.id) ? list : [...list, e]));
            break;
          case "approval_resolved":
            setApprovals((list) => list.filter((a) => a.id !== e.id));
            break;
          case "egress":
            setEgress((list) => [e, ...list.filter((x) => x.event_id !== e.event_id)].slice(0, MAX_CONNECTIONS));
          case "checkpoint":
          case "restored":
            loadCheckpoints().catch(() => {});
            break;
        }
      }, () => {});
    })();
    // A phone that woke up or came back online checks at once.
    const wake = () => {
      if (document.hidden) return;
      stream.current && stream.current.restart();
      reload().catch(() => {});
      loadApprovals().catch(() => {});
      loadEgress().catch(() => {});
    };
    document.addEventListener("visibilitychange", wake);
    window.addEventListener("online", wake);
    return () => {
      closed = true;
      clearTimeout(pendingReload);
      document.removeEventListener("visibilitychange", wake);
      window.removeEventListener("online", wake);
      stream.current && stream.current.close();
    };
  }, [id]);

  // older loads the page before the first message; it returns how many
  // messages came.
  const older = useCallback(async () => {
    if (!messages.length) return 0;
    const r = await api.session(id, { before: messages[0].id });
    const got = r.messages || [];
    setMessages((m) => [...got, ...m]);
    setMore(!!r.more);
    return got.length;
  }, [id, messages]);

  // setMemory turns the session's memory on or off.
  const setMemory = useCallback(async (on) => {
    const r = await api.patchSession(id, { memory: on });
    setSess((x) => ({ ...(x || {}), memory: r.memory }));
    return r.memory;
  }, [id]);

  return { sess, messages, more, older, queued, live, approvals, status, failure, request, egress, calls: calls.current, tick, browserTick, reload, setMemory,
    checkpoints, loadCheckpoints };
}

function Chat({ id, onError, onTitle, panel, setPanel, onMemory, onBrowser }) {
  const s = useSession(id, onError);
  // The topbar's memory switch is the App's; it shows this chat's.
  const memoryOn = s.sess ? s.sess.memory : null;
  useEffect(() => {
    onMemory(memoryOn === null ? null : { on: memoryOn, set: s.setMemory });
    return () => onMemory(null);
  }, [memoryOn, s.setMemory]);
  // The topbar's Browser button shows when the session's browser has a
  // page: asked when the chat opens and after each browser_use call.
  useEffect(() => {
    let gone = false;
    api.browser(id).then((r) => !gone && onBrowser(r.active), () => {});
    return () => { gone = true; };
  }, [id, s.browserTick]);
  useEffect(() => () => onBrowser(false), []);
  const [termOpened, setTermOpened] = useState(false);
  const [filesAt, setFilesAt] = useState(undefined);
  useEffect(() => {
    if (panel === "terminal") setTermOpened(true);
  }, [panel]);
  // A path in the agent's text opens the files panel there; a browser
  // card's button, the browser.
  const onClick = (e) => {
    if (e.target.closest && e.target.closest("[data-den-browser]")) {
      setPanel("browser");
      return;
    }
    const a = e.target.closest && e.target.closest("a[data-den-path]");
    if (!a) return;
    e.preventDefault();
    const p = a.getAttribute("data-den-path");
    if (p.startsWith("/workspace/")) {
      setFilesAt(p.slice("/workspace/".length));
      setPanel("files");
    } else if (p.startsWith("/den/attachments/")) {
      window.open(attachmentURL(id, p.slice("/den/attachments/".length)) + "?inline=1", "_blank", "noopener");
    }
  };
  const list = useRef(null);
  const stick = useRef(true);
  const busy = s.status === "running" || s.status === "waiting" || s.status === "queued";

  // Results of committed calls, by call id, from the tool messages;
  // and the calls committed messages show.
  const [results, committed] = useMemo(() => {
    const m = new Map();
    const calls = new Set();
    for (const msg of s.messages) {
      for (const p of msg.parts) {
        if (p.type === "tool_result") m.set(p.call_id, p);
        if (p.type === "tool_call") calls.add(p.id);
      }
    }
    return [m, calls];
  }, [s.messages]);
  const live = s.live.filter((seg) => seg.kind !== "tool" || !committed.has(seg.id));

  const visible = useMemo(() => s.messages.filter((m) => m.role !== "tool" && !(m.role === "user" && m.parts.every((p) => p.type === "tool_result"))),
    [s.messages]);
  const win = useWindow(list, visible, s.more, s.older);
  const shown = visible.slice(win.start, win.end);
  // The messages of the running turn (from the last question on) follow
  // its calls as they run; the others render once and stay.
  let turnFrom = visible.length;
  while (turnFrom > 0 && visible[turnFrom - 1].role !== "user") turnFrom--;

  // Keep the newest text in view while it streams, unless the reader
  // scrolled up.
  useLayoutEffect(() => {
    const el = list.current;
    if (el && stick.current && win.following) el.scrollTop = el.scrollHeight;
  });
  const onScroll = () => {
    const el = list.current;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    win.onScroll();
  };

  useEffect(() => {
    const onKey = (e) => {
      if (e.key === "Escape" && busy) api.cancel(id).catch(() => {});
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [busy, id]);

  return html`
    <section class=${"chat" + (panel ? " with-panel" : "")} aria-label="Chat">
      <div class="chat-main">
      <div class="messages" ref=${list} onScroll=${onScroll} onClick=${onClick} role="log" aria-live="polite" aria-relevant="additions">
        ${(win.start > 0 || s.more) && html`<button class="link older" onClick=${win.up}>Load older messages</button>`}
        ${shown.map((m, j) => {
          const i = win.start + j;
          const inTurn = i >= turnFrom;
          return html`<${Message} key=${m.id} m=${m} session=${id} results=${results} calls=${inTurn ? s.calls : null} tick=${inTurn ? s.tick : 0}
            prevUser=${precedingUser(visible, i)} last=${i === visible.length - 1 || visible[i + 1].role === "user"} busy=${busy} onError=${onError} reload=${s.reload}
            checkpoint=${s.checkpoints.get(m.id)} onRestored=${s.loadCheckpoints} />`;
        })}
        ${win.end < visible.length && html`<button class="link newer" onClick=${win.down}>Load newer messages</button>`}
        ${live.length > 0 && html`<${Live} segments=${live} calls=${s.calls} session=${id} />`}
        ${s.approvals.map((a) => html`<${Approval} key=${a.id} a=${a} onError=${onError} />`)}
        ${s.queued.map((q) => html`<div class="msg user queued" key=${q.message_id}>
          <div class="bubble">${q.text}</div><div class="meta">Queued: joins the running turn at its next step</div></div>`)}
        ${busy && live.length === 0 && s.approvals.length === 0 && html`<div class="thinking-dots" aria-label="Working">
          <span></span><span></span><span></span></div>`}
        ${s.failure && html`<div class="banner error" role="alert">${s.failure}</div>`}
        ${!busy && s.request && win.end >= visible.length && html`<${RequestInfo} parts=${s.request} />`}
        ${s.egress.length > 0 && win.end >= visible.length && html`<${NetworkInfo} conns=${s.egress} />`}
      </div>
      ${!win.following && html`<button class="latest" onClick=${() => { stick.current = true; win.latest(); }}>Jump to the latest</button>`}
      <${Composer} id=${id} busy=${busy} onError=${onError} onSent=${() => { stick.current = true; onTitle(); }}
        memory=${memoryOn} setMemory=${s.setMemory} />
      </div>
      ${(panel || termOpened) && html`
        <aside class=${"panel" + (panel ? "" : " hidden")} aria-label=${PANELS[panel] || "Files"}>
          <header class="panel-top">
            <h2>${PANELS[panel] || "Files"}</h2>
            <button class="icon" aria-label="Close panel" onClick=${() => setPanel(null)}>${icon(ICONS.close)}</button>
          </header>
          ${panel === "files" && html`<${Files} id=${id} onError=${onError} start=${filesAt} />`}
          ${panel === "browser" && html`<${BrowserView} id=${id} tick=${s.browserTick} />`}
          ${termOpened && html`<div class="panel-term" hidden=${panel !== "terminal"}><${Terminal} id=${id} visible=${panel === "terminal"} /></div>`}
        </aside>`}
    </section>`;
}

// PANELS are the side panels' names.
const PANELS = { files: "Files", terminal: "Terminal", browser: "Browser" };

// ---------------------------------------------------------------- long sessions

// WINDOW is how many messages are on the page at most; STEP how many it
// moves by when the reader scrolls past either end. The rest stay in
// memory (and older pages on den, loaded as the reader goes up).
const WINDOW = 150;
const STEP = 50;

// useWindow keeps a window of the messages on the page: the latest ones
// while the reader follows the conversation, an earlier stretch once
// they scroll up. Moving the window keeps what the reader looks at in
// place: the first message in view stays where it was on the screen.
function useWindow(listRef, visible, more, older) {
  const [top, setTop] = useState(null); // the id of the first message shown; null: follow the latest
  const anchor = useRef(null); // {id, offset} to restore after a move
  const moving = useRef(false); // a move waits for its render
  const loading = useRef(false); // an older page is on its way
  const n = visible.length;
  let start = Math.max(0, n - WINDOW);
  if (top !== null) {
    const i = visible.findIndex((m) => m.id === top);
    if (i >= 0) start = i;
  }
  const end = Math.min(n, start + WINDOW);
  const following = top === null;

  // pin records the first message in view and where it is.
  const pin = () => {
    const el = listRef.current;
    if (!el) return;
    const box = el.getBoundingClientRect();
    for (const m of el.querySelectorAll(".msg[data-id]")) {
      const r = m.getBoundingClientRect();
      if (r.bottom > box.top) {
        anchor.current = { id: m.dataset.id, offset: r.top - box.top };
        return;
      }
    }
  };
  useLayoutEffect(() => {
    if (!moving.current) return;
    moving.current = false;
    const a = anchor.current;
    const el = listRef.current;
    anchor.current = null;
    if (!a || !el) return;
    const m = el.querySelector(`.msg[data-id="${CSS.escape(a.id)}"]`);
    if (m) el.scrollTop += m.getBoundingClientRect().top - el.getBoundingClientRect().top - a.offset;
  });

  const moveTo = (i) => {
    moving.current = true;
    pin();
    const next = Math.max(0, Math.min(i, n - 1));
    setTop(next + WINDOW >= n ? null : visible[next].id);
  };
  // An older page asked for: once it is in, the window moves up over it.
  const pending = useRef(null);
  useEffect(() => {
    const first = pending.current;
    if (!first) return;
    const i = visible.findIndex((m) => m.id === first);
    if (i <= 0) return; // not in yet
    pending.current = null;
    loading.current = false;
    moveTo(i - STEP);
  }, [visible]);
  const up = async () => {
    if (moving.current || loading.current) return;
    if (start > 0) return moveTo(start - STEP);
    if (!more || !n) return;
    loading.current = true;
    // Hold the window on what is shown while the page comes.
    pending.current = visible[0].id;
    setTop(visible[0].id);
    let k = 0;
    try {
      k = await older();
    } catch {
      /* den out of reach: the reader can scroll again */
    }
    if (!k) {
      pending.current = null;
      loading.current = false;
    }
  };
  const down = () => {
    if (!moving.current && !loading.current && end < n) moveTo(start + STEP);
  };
  const onScroll = () => {
    const el = listRef.current;
    if (!el || moving.current || loading.current) return;
    if (el.scrollTop < 300 && (start > 0 || more)) up();
    else if (el.scrollHeight - el.scrollTop - el.clientHeight < 300 && end < n) down();
  };
  const latest = () => {
    anchor.current = null;
    setTop(null);
  };
  return { start, end, following: following || end >= n, onScroll, up, down, latest };
}

// PARTS names the parts of a request, in the order they are shown.
const PARTS = [["system", "den's prompt and your instructions"], ["skills", "skills index"], ["memory", "memory"],
  ["context_files", "AGENTS.md / CLAUDE.md"], ["tools", "tools"], ["history", "conversation"], ["attachments", "images"]];

// RequestInfo says how the last request to the model was made up: the
// input tokens the provider counted, shared among its parts.
function RequestInfo({ parts }) {
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  const known = new Set(PARTS.map(([k]) => k));
  const rows = [...PARTS, ...Object.keys(parts).filter((k) => !known.has(k)).map((k) => [k, k])].filter(([k]) => parts[k]);
  return html`<details class="request-info"><summary>Last request: ${total.toLocaleString()} tokens in</summary>
    <table><tbody>${rows.map(([k, label]) => html`<tr key=${k}><th scope="row">${label}</th>
      <td>${parts[k].toLocaleString()}</td><td>${Math.round((100 * parts[k]) / total)}%</td></tr>`)}</tbody></table>
    <p class="muted">The provider's count, shared among the parts by den's estimates.</p></details>`;
}

// MAX_CONNECTIONS is how many of a session's connections the chat keeps.
const MAX_CONNECTIONS = 100;

// NetworkInfo lists the connections of the session's computer, newest
// first: each went out through den, or was refused, and says why.
function NetworkInfo({ conns }) {
  const refused = conns.filter((c) => !c.allowed).length;
  const time = (c) => new Date(c.time).toLocaleTimeString();
  return html`<details class="network-info"><summary>Network: ${conns.length}${conns.length >= MAX_CONNECTIONS ? "+" : ""} connection${conns.length === 1 ? "" : "s"}${
    refused > 0 && html`, <span class="refused">${refused} refused</span>`}</summary>
    <table><tbody>${conns.map((c) => html`<tr key=${c.event_id} class=${c.allowed ? "" : "refused"} title=${c.message || c.error || ""}>
      <td>${time(c)}</td><th scope="row">${c.host}:${c.port}</th>
      <td>${c.allowed ? "allowed" : "refused"}${c.by && c.by !== "policy" ? ` (${c.by})` : ""}${c.via ? ` · ${viaText(c.via)}` : ""}${c.secrets ? " · secret" : ""}</td>
      <td>${c.allowed ? `↑${bytes(c.bytes_out)} ↓${bytes(c.bytes_in)}` : ""}</td></tr>
      ${!c.allowed && c.message && html`<tr class="why"><td></td><td colspan="3">${c.message}</td></tr>`}`)}</tbody></table>
    <p class="muted">Every connection of the computer leaves through den under the agent's egress policy (den network log).</p></details>`;
}

// viaText names whose policy decided a connection, when not the
// agent's: an MCP server's own, or a rule of a skill in use.
function viaText(via) {
  const [kind, name] = via.split(":", 2);
  return kind === "mcp" ? `MCP server ${name}` : kind === "skill" ? `skill ${name}` : via;
}

function bytes(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

function precedingUser(msgs, i) {
  for (let j = i - 1; j >= 0; j--) if (msgs[j].role === "user") return msgs[j];
  return null;
}

// ---------------------------------------------------------------- messages

// memo renders C again only when one of its props changed: a long
// session's messages render once, not on every streamed word.
function memo(C) {
  return class extends Component {
    shouldComponentUpdate(next) {
      for (const k in next) if (next[k] !== this.props[k]) return true;
      for (const k in this.props) if (!(k in next)) return true;
      return false;
    }
    render(props) {
      return h(C, props);
    }
  };
}

const Message = memo(MessageView);

function MessageView({ m, session, results, calls, prevUser, last, busy, onError, reload, checkpoint, onRestored }) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState("");
  const text = m.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n\n");
  const images = m.parts.filter((p) => p.type === "image");
  const act = (f) => f().then(() => reload()).catch((e) => onError(message(e)));

  if (m.role === "user") {
    const { said: typed, attached } = attachments(text);
    const { said, skill } = skillOf(typed);
    return html`
      <div class="msg user" data-id=${m.id}>
        ${editing
          ? html`<form class="edit" onSubmit=${(e) => { e.preventDefault(); setEditing(false); act(() => api.edit(session, m.id, draft)); }}>
              <textarea aria-label="Edit message" value=${draft} onInput=${(e) => setDraft(e.target.value)}></textarea>
              <div class="row"><button type="button" onClick=${() => setEditing(false)}>Cancel</button>
              <button class="primary" type="submit">Save and send</button></div></form>`
          : html`<div class="bubble">${said}${skill && html`<details class="skill-used"><summary>Skill: ${skill.name}</summary>
              <pre>${skill.body}</pre></details>`}</div>`}
        ${images.map((p) => html`<img class="attached" alt="An attached image" src=${`data:${p.media_type};base64,${p.data}`} />`)}
        ${attached.map((a) => html`<${Attached} key=${a.name} a=${a} session=${session} shown=${images.length > 0} />`)}
        <div class="meta">
          <${Versions} m=${m} session=${session} act=${act} />
          ${!editing && !busy && html`<button class="link" onClick=${() => { setDraft(text); setEditing(true); }}>Edit</button>`}
        </div>
      </div>`;
  }
  return html`
    <div class="msg assistant" data-id=${m.id}>
      ${m.parts.map((p, i) => {
        if (p.type === "text") return html`<${Markdown} key=${i} text=${p.text} session=${session} />`;
        if (p.type === "thinking") return html`<${Thinking} key=${i} text=${p.text} />`;
        if (p.type === "tool_call") return html`<${ToolCard} key=${p.id} call=${p} result=${results.get(p.id)} live=${calls && calls.get(p.id)} session=${session} />`;
        if (p.type === "image") return html`<img class="attached" alt="An image" src=${`data:${p.media_type};base64,${p.data}`} />`;
        return null;
      })}
      ${checkpoint && html`<${Changes} session=${session} checkpoint=${checkpoint} busy=${busy} onError=${onError} onRestored=${onRestored} />`}
      ${(last || (m.versions || []).length > 1) && html`<div class="meta">
        <${Versions} m=${m} session=${session} act=${act} />
        ${last && prevUser && !busy && html`<button class="link" onClick=${() => act(() => api.regenerate(session, prevUser.id))}>Regenerate</button>`}
        ${last && !busy && text && html`<button class="link" onClick=${() => navigator.clipboard && navigator.clipboard.writeText(text)}>Copy</button>`}
      </div>`}
    </div>`;
}

// SKILL is the block den adds to a message sent as "/NAME ...": the
// skill's SKILL.md and a line asking the model to follow it.
const SKILL = /\n*<skill name="([^"]+)" path="[^"]*">\n([\s\S]*?)\n?<\/skill>\nThe user asked to use the skill "[^"]*" for this: follow its instructions \(its other files are in [^\n]*\)\.$/;

// skillOf splits a user message's text into what the user said and the
// skill den put in front of the model with it.
function skillOf(text) {
  const m = SKILL.exec(text);
  if (!m) return { said: text, skill: null };
  return { said: text.slice(0, m.index).trim() || "/" + m[1], skill: { name: m[1], body: m[2] } };
}

// ATTACHED is the line den adds to a message for each attachment.
const ATTACHED = /^\[attached: \/den\/attachments\/([^ \]]+) \(([^,)]*)[^\]]*\]$/;

// attachments splits a user message's text into what the user said and
// the files attached to it.
function attachments(text) {
  const attached = [];
  const said = text.split("\n").filter((line) => {
    const m = ATTACHED.exec(line.trim());
    if (m) attached.push({ name: m[1], type: m[2] });
    return !m;
  }).join("\n").trim();
  return { said, attached };
}

export function attachmentURL(session, name) {
  return `/api/v1/sessions/${encodeURIComponent(session)}/attachments/${encodeURIComponent(name)}`;
}

// Attached is an attachment as a message shows it: audio and video play
// inline, an image the message does not carry is shown from the
// computer, anything else is a link.
function Attached({ a, session, shown }) {
  const url = attachmentURL(session, a.name);
  if (a.type.startsWith("audio/")) return html`<audio class="attached" controls preload="metadata" src=${url} aria-label=${a.name}></audio>`;
  if (a.type.startsWith("video/")) return html`<video class="attached" controls preload="metadata" src=${url} aria-label=${a.name}></video>`;
  if (a.type.startsWith("image/") && !shown) return html`<img class="attached" alt=${a.name} src=${url + "?inline=1"} />`;
  if (a.type.startsWith("image/")) return null;
  return html`<a class="attached-file" href=${url} download>${a.name}</a>`;
}

function Versions({ m, session, act }) {
  const v = m.versions || [];
  if (v.length < 2) return null;
  const i = v.indexOf(m.id);
  return html`<span class="versions" role="group" aria-label="Versions">
    <button class="icon" aria-label="Previous version" disabled=${i <= 0} onClick=${() => act(() => api.branch(session, v[i - 1]))}>‹</button>
    <span>${i + 1}/${v.length}</span>
    <button class="icon" aria-label="Next version" disabled=${i >= v.length - 1} onClick=${() => act(() => api.branch(session, v[i + 1]))}>›</button>
  </span>`;
}

// Markdown renders text; while it streams it is rendered at most once a
// frame. With a session (a message that is whole), the files its den://
// URLs name are linked and previewed.
function Markdown({ text, session }) {
  const el = useRef(null);
  const [shown, setShown] = useState(text);
  useEffect(() => {
    if (text === shown) return;
    const f = requestAnimationFrame(() => setShown(text));
    return () => cancelAnimationFrame(f);
  }, [text]);
  const out = useMemo(() => markdown(shown), [shown]);
  useLayoutEffect(() => {
    if (!el.current) return;
    linkPaths(el.current);
    resources(el.current, session);
    highlight(el.current);
  }, [out, session]);
  return html`<div class="md" ref=${el} dangerouslySetInnerHTML=${{ __html: out }}></div>`;
}

function Thinking({ text }) {
  return html`<details class="thinking"><summary>Thinking</summary><div class="thinking-text">${text}</div></details>`;
}

function Live({ segments, calls, session }) {
  return html`<div class="msg assistant live" aria-busy="true">
    ${segments.map((s, i) => {
      if (s.kind === "text") return html`<${Markdown} key=${"t" + i} text=${s.text} />`;
      if (s.kind === "thinking") return html`<${Thinking} key=${"k" + i} text=${s.text} />`;
      return html`<${ToolCard} key=${s.id} call=${s} live=${calls.get(s.id)} session=${session} />`;
    })}
  </div>`;
}

// summary is what a collapsed card says a call does.
function summary(call) {
  const input = call.input || {};
  if (typeof input === "object") {
    if (input.tool_title) return input.tool_title;
    if (input.command) return input.command;
    if (input.path) return input.path;
    if (input.url) return input.url;
  }
  const s = typeof input === "string" ? input : JSON.stringify(input);
  return s.length > 200 ? s.slice(0, 200) + "…" : s;
}

function ToolCard({ call, result, live, session }) {
  const info = live || {};
  const labels = call.labels || info.labels || [];
  const running = info.running && !result;
  const exit = call.exit_code ?? info.exit_code;
  const duration = call.duration_ms ?? info.duration_ms;
  const isError = result ? result.is_error : info.is_error;
  let output = info.output;
  if (output === undefined && result) output = (result.content || []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
  const offload = output && /\/den\/offloads\/([^\s)'"\/\]]+)/.exec(output);
  return html`
    <details class=${"tool" + (isError ? " failed" : "") + (running ? " running" : "")}>
      <summary>
        <span class="tool-name">${call.name}</span>
        <code class="tool-cmd">${summary(call)}</code>
        <span class="tool-facts">
          ${labels.map((l) => html`<span class="label">${l}</span>`)}
          ${running && html`<span class="label run">running</span>`}
          ${exit !== undefined && exit !== null && html`<span class=${"label" + (exit ? " bad" : "")}>exit ${exit}</span>`}
          ${duration !== undefined && duration !== null && html`<span class="label">${formatDuration(duration)}</span>`}
        </span>
      </summary>
      ${call.input && typeof call.input === "object" && call.input.command && (call.input.command.length > 60 || call.input.command.includes("\n")) &&
        html`<pre class="tool-input">${call.input.command}</pre>`}
      ${call.name === BROWSER_TOOL && html`<p class="tool-browser"><button class="link" data-den-browser>Watch the browser</button></p>`}
      ${output !== undefined && html`<pre class="tool-output">${output}</pre>`}
      ${offload && html`<p class="offload">The full output: <a href=${`/api/v1/sessions/${encodeURIComponent(session)}/offloads/${encodeURIComponent(offload[1])}?inline=1`}
        target="_blank" rel="noopener">${offload[0]}</a></p>`}
    </details>`;
}

// ---------------------------------------------------------------- undo in the computer

// Changes shows what a turn changed in the computer (from the
// checkpoint den took before its first call that could change it to
// the next one, or to now), with a button that puts the computer back
// as it was before the turn.
function Changes({ session, checkpoint, busy, onError, onRestored }) {
  const [diff, setDiff] = useState(null);
  const [failed, setFailed] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [restoring, setRestoring] = useState(false);
  const [done, setDone] = useState(null);
  const load = () => {
    setFailed("");
    api.changes(session, checkpoint.id).then(setDiff, (e) => setFailed(message(e)));
  };
  const onToggle = (e) => {
    if (e.target.open) load();
  };
  const undo = async () => {
    setConfirming(false);
    setRestoring(true);
    try {
      setDone(await api.restore(session, checkpoint.id));
      onRestored && onRestored();
      load();
    } catch (e) {
      setFailed(message(e));
    } finally {
      setRestoring(false);
    }
  };
  const redo = async () => {
    setRestoring(true);
    try {
      await api.restore(session, done.saved);
      setDone(null);
      onRestored && onRestored();
      load();
    } catch (e) {
      setFailed(message(e));
    } finally {
      setRestoring(false);
    }
  };
  const d = diff;
  const count = d ? d.added + d.removed + d.changed : 0;
  return html`
    <details class="tool changes" onToggle=${onToggle}>
      <summary>
        <span class="tool-name">Changes in the computer</span>
        <span class="tool-facts">
          ${d && html`<span class="label">${count === 0 && d.packages.length === 0 ? "none" : `${d.added} added, ${d.changed} changed, ${d.removed} removed`}</span>`}
          ${d && d.packages.length > 0 && html`<span class="label">${d.packages.length} package${d.packages.length === 1 ? "" : "s"}</span>`}
        </span>
      </summary>
      <div class="changes-body">
        ${!d && !failed && html`<p class="muted">Reading…</p>`}
        ${d && d.packages.length > 0 && html`<ul class="packages">${d.packages.map((p) => html`<li key=${p.name}>
          ${p.op === "installed" ? html`<b>+</b> ${p.name} ${p.to}` : p.op === "removed" ? html`<b>−</b> ${p.name} ${p.from}` : html`<b>~</b> ${p.name} ${p.from} → ${p.to}`}</li>`)}</ul>`}
        ${d && d.changes.length > 0 && html`<ul class="files">${d.changes.slice(0, 200).map((c) => html`<li key=${c.path} class=${c.op}>
          <b>${c.op === "added" ? "+" : c.op === "removed" ? "−" : "~"}</b> <code>${c.path}</code>${" "}<span class="muted">${c.op === "changed" ? (c.what || []).join(", ") : c.kind === "folder" ? `folder, ${c.entries} entries` : c.kind}</span></li>`)}</ul>`}
        ${d && d.changes.length + d.more > 200 && html`<p class="muted">and ${d.changes.length + d.more - 200} more (den computer diff ${checkpoint.id} lists them all)</p>`}
        ${failed && html`<p class="error" role="alert">${failed}</p>`}
        ${done && html`<p class="restored" role="status">The computer is back as it was before this turn
          (${done.undone.added} added, ${done.undone.changed} changed, ${done.undone.removed} removed undone).
          Not touched: ${done.untouched.join(", ")}.
          ${done.saved ? html` <button class="link" disabled=${restoring} onClick=${redo}>Redo</button>` : ""}</p>`}
        ${!done && (confirming
          ? html`<p class="confirm">Put the computer back as it was before this turn? What later turns changed in it goes too;
              your mounted folders are not touched. <button class="danger" onClick=${undo}>Undo the changes</button>
              <button onClick=${() => setConfirming(false)}>Cancel</button></p>`
          : html`<p><button disabled=${busy || restoring} title=${busy ? "Wait for the turn to end" : ""}
              onClick=${() => setConfirming(true)}>${restoring ? "Undoing…" : "Undo"}</button></p>`)}
      </div>
    </details>`;
}

function formatDuration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// ---------------------------------------------------------------- approvals

function Approval({ a, onError }) {
  const [sent, setSent] = useState(false);
  const answer = (decision, scope) => {
    setSent(true);
    api.answer(a.id, decision, scope).catch((e) => {
      setSent(false);
      // Answered elsewhere first: the event that says so removes it.
      if (!(e instanceof ApiError && e.status === 409)) onError(message(e));
    });
  };
  const scopes = a.scopes || ["once", "session", "always"];
  const args = Array.isArray(a.args) ? a.args.join(" ") : "";
  return html`
    <div class="approval" role="group" aria-label="Approval needed">
      <p class="question">${a.question || `Allow ${a.command}?`}</p>
      ${(a.command || args) && html`<pre class="approval-cmd">${[a.command, args].filter(Boolean).join(" ")}</pre>`}
      <div class="row">
        ${scopes.includes("once") && html`<button class="primary" disabled=${sent} onClick=${() => answer("allow", "once")}>Allow once</button>`}
        ${scopes.includes("session") && html`<button disabled=${sent} onClick=${() => answer("allow", "session")}>Allow for this session</button>`}
        ${scopes.includes("always") && html`<button disabled=${sent} onClick=${() => answer("allow", "always")}>Always allow</button>`}
        <button class="danger" disabled=${sent} onClick=${() => answer("deny")}>Deny</button>
      </div>
    </div>`;
}

// ---------------------------------------------------------------- the composer

// COMMAND is a slash command typed in the composer: /memory [on|off].
const COMMAND = /^\/memory(?:\s+(on|off))?$/i;

function Composer({ id, busy, onError, onSent, memory, setMemory }) {
  const [text, setText] = useState(() => sessionStorage.getItem("den.draft." + id) || "");
  const [files, setFiles] = useState([]);
  const [sending, setSending] = useState(false);
  const [note, setNote] = useState("");
  const [skills, setSkills] = useState(null); // loaded when "/" is typed
  const [prompts, setPrompts] = useState(null); // the MCP servers' prompts, likewise
  const toggleMemory = (on) => setMemory(on).then(
    (now) => setNote(now ? "Memory is on for this chat: den remembers and recalls." : "Memory is off for this chat: nothing is remembered or recalled."),
    (e) => onError(message(e)));
  const area = useRef(null);
  const picker = useRef(null);

  useEffect(() => sessionStorage.setItem("den.draft." + id, text), [text, id]);
  useLayoutEffect(() => {
    const el = area.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = Math.min(el.scrollHeight, window.innerHeight * 0.4) + "px";
  }, [text]);

  const send = async () => {
    const t = text.trim();
    if ((!t && !files.length) || sending) return;
    const cmd = !files.length && COMMAND.exec(t);
    if (cmd) {
      setText("");
      toggleMemory(cmd[1] ? cmd[1].toLowerCase() === "on" : !memory);
      return;
    }
    setSending(true);
    try {
      let names = [];
      if (files.length) {
        const r = await api.attach(id, files);
        names = (r.attachments || []).map((a) => a.name);
      }
      await api.send(id, t, names);
      setText("");
      setFiles([]);
      onSent();
    } catch (e) {
      onError(message(e));
    } finally {
      setSending(false);
    }
  };
  // "/" at the start suggests the commands, the skills and the MCP
  // servers' prompts (/SERVER:PROMPT).
  const slash = /^\/[a-z0-9_:-]*$/i.test(text) ? text.slice(1).toLowerCase() : null;
  useEffect(() => {
    if (slash !== null && skills === null) {
      setSkills([]);
      api.skills(id).then((r) => setSkills((r.skills || []).filter((k) => k.usable)), () => {});
    }
    if (slash !== null && prompts === null) {
      setPrompts([]);
      fetch("/api/v1/mcp?" + new URLSearchParams({ session: id }), { credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : { servers: [] }))
        .then((r) => setPrompts((r.servers || []).flatMap((s) => (s.prompts || []).map((p) => ({
          name: s.name + ":" + p.name,
          description: [p.description, (p.arguments || []).map((a) => a + "=…").join(" ")].filter(Boolean).join(" — "),
        })))), () => {});
    }
  }, [slash !== null]);
  const suggestions = slash === null ? [] : [
    { name: "memory", description: "turn this chat's memory on or off" },
    ...(skills || []),
    ...(prompts || []),
  ].filter((k) => k.name.toLowerCase().startsWith(slash)).slice(0, 8);
  const pick = (name) => {
    setText("/" + name + " ");
    area.current && area.current.focus();
  };
  const onKey = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && desktop()) {
      e.preventDefault();
      send();
    }
  };
  const add = (list) => setFiles((f) => [...f, ...[...list].filter((x) => x.size >= 0)]);
  const onPaste = (e) => {
    const items = [...(e.clipboardData?.files || [])];
    if (items.length) {
      e.preventDefault();
      add(items);
    }
  };
  const onDrop = (e) => {
    e.preventDefault();
    if (e.dataTransfer?.files?.length) add(e.dataTransfer.files);
  };

  return html`
    <form class="composer" onSubmit=${(e) => { e.preventDefault(); send(); }} onDragOver=${(e) => e.preventDefault()} onDrop=${onDrop}>
      ${note && html`<p class="composer-note" role="status">${note} <button type="button" class="link" onClick=${() => setNote("")}>OK</button></p>`}
      ${suggestions.length > 0 && html`<ul class="suggestions" role="listbox" aria-label="Commands, skills and prompts">
        ${suggestions.map((k) => html`<li key=${k.name} role="option"><button type="button" onClick=${() => pick(k.name)}>
          <strong>/${k.name}</strong> <span class="muted">${(k.description || "").slice(0, 90)}</span></button></li>`)}</ul>`}

      ${files.length > 0 && html`<ul class="files">${files.map((f, i) => html`<li key=${i}>${f.name || "pasted file"}
        <button type="button" class="icon" aria-label=${"Remove " + (f.name || "file")} onClick=${() => setFiles(files.filter((_, j) => j !== i))}>×</button></li>`)}</ul>`}
      <div class="row">
        <button type="button" class="icon" aria-label="Attach" onClick=${() => picker.current.click()}>${icon(ICONS.attach)}</button>
        <input ref=${picker} type="file" multiple hidden accept="image/*,audio/*,video/*,application/pdf,text/*,*/*"
          onChange=${(e) => { add(e.target.files); e.target.value = ""; }} />
        <textarea id="composer" ref=${area} rows="1" aria-label="Message" placeholder=${busy ? "Add to the running turn…" : "Message den"}
          value=${text} onInput=${(e) => setText(e.target.value)} onKeyDown=${onKey} onPaste=${onPaste}></textarea>
        ${busy && html`<button type="button" class="icon stop" aria-label="Stop" onClick=${() => api.cancel(id).catch((e) => onError(message(e)))}>${icon(ICONS.stop)}</button>`}
        <button type="submit" class="icon send" aria-label="Send" disabled=${sending || (!text.trim() && !files.length)}>${icon(ICONS.send)}</button>
      </div>
    </form>`;
}

const root = document.getElementById("app");
root.textContent = "";
mount(html`<${App} />`, root);

if ("serviceWorker" in navigator && window.isSecureContext) {
  navigator.serviceWorker.register("/sw.js").catch(() => {});
}
