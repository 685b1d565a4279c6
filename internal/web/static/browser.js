// The agent's browser: its current tab, live, over the daemon's
// screencast WebSocket, and the user's taking it over. While the user
// has it, taps and clicks on the picture are the page's mouse, a drag
// or the wheel scrolls it, and what is typed into the field below goes
// to the page; the agent's actions wait. Closing the panel (or losing
// the socket) gives the browser back.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";

const html = htm.bind(h);

// KEYS are the keys sent to the page as keys rather than as text.
const KEYS = new Set(["Enter", "Backspace", "Tab", "Escape", "Delete", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown",
  "Home", "End", "PageUp", "PageDown"]);
// KEEP is what the typing field holds between inputs: a phone's
// keyboard sends Backspace in an empty field as nothing at all, but as
// a deletion of this.
const KEEP = "\u200b";
// TAP is how far, in screen pixels, a finger may move and still tap.
const TAP = 8;
// MOVES is how often, in ms, mouse moves and scrolls are sent at most.
const MOVES = 33;
// BUTTONS are the mouse's buttons by a pointer event's button.
const BUTTONS = ["left", "middle", "right"];

// BrowserView is the panel. It is one component, long as it is: the
// socket, the picture and the input all use the frame shown and who has
// control. tick changes when the agent used its browser again.
export function BrowserView({ id, tick }) {
  const [frame, setFrame] = useState(null); // {src, width, height, url, title}
  const [control, setControl] = useState({ control: false, yours: false });
  const [status, setStatus] = useState("Connecting…");
  const [ended, setEnded] = useState(false);
  const [note, setNote] = useState("");
  const [attempt, setAttempt] = useState(0); // bumped to connect again
  const ws = useRef(null);
  const img = useRef(null);
  const keys = useRef(null);
  const meta = useRef(null); // the shown frame's metadata, for input
  const touch = useRef(null); // the finger on the picture
  const moves = useRef(null); // a mouse move or a scroll waiting for the next animation frame
  // urls are the pictures' object URLs: each is revoked once a newer
  // one shows, and all when the panel goes.
  const urls = useRef([]);
  useEffect(() => () => urls.current.forEach((u) => URL.revokeObjectURL(u)), []);

  useEffect(() => {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const sock = new WebSocket(`${proto}//${location.host}/api/v1/sessions/${encodeURIComponent(id)}/browser/screencast`);
    sock.binaryType = "blob";
    ws.current = sock;
    setEnded(false);
    setStatus("Connecting…");
    let pending = null; // a frame's metadata, whose picture comes next
    sock.onmessage = (m) => {
      if (typeof m.data !== "string") {
        if (!pending) return;
        const src = URL.createObjectURL(new Blob([m.data], { type: "image/jpeg" }));
        urls.current.push(src);
        meta.current = pending;
        setFrame({ ...pending, src });
        pending = null;
        return;
      }
      let msg;
      try {
        msg = JSON.parse(m.data);
      } catch {
        return;
      }
      if (msg.type === "frame") pending = msg;
      if (msg.type === "control") setControl({ control: msg.control, yours: msg.yours });
      if (msg.type === "error") setNote(msg.message);
      if (msg.type === "end") {
        setStatus(msg.reason);
        setEnded(true);
      }
    };
    sock.onopen = () => setStatus("");
    sock.onclose = () => {
      setEnded(true);
      setControl({ control: false, yours: false });
      setStatus((s) => s || "The connection to the browser closed.");
    };
    // A phone that wakes up with the socket gone connects again.
    const wake = () => !document.hidden && sock.readyState === WebSocket.CLOSED && setAttempt((n) => n + 1);
    document.addEventListener("visibilitychange", wake);
    return () => {
      document.removeEventListener("visibilitychange", wake);
      sock.onclose = null;
      sock.close();
    };
  }, [id, attempt]);

  // The agent used its browser again: a view that ended connects again.
  useEffect(() => {
    if (ended && tick) setAttempt((n) => n + 1);
  }, [tick]);

  const send = (m) => ws.current && ws.current.readyState === WebSocket.OPEN && ws.current.send(JSON.stringify(m));
  const input = (m) => send({ type: "input", ...m });
  const yours = control.yours && !ended;

  // at maps a point on the screen to the page's CSS pixels.
  const at = (clientX, clientY) => {
    const r = img.current.getBoundingClientRect();
    const f = meta.current;
    const clamp = (v, max) => Math.max(0, Math.min(max, v));
    return { x: clamp(((clientX - r.left) * f.width) / r.width, f.width), y: clamp(((clientY - r.top) * f.height) / r.height, f.height) };
  };
  // scale is the page's CSS pixels per screen pixel.
  const scale = () => meta.current.width / img.current.getBoundingClientRect().width;
  const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);

  // Moves and scrolls go at most every MOVES ms (scrolls add up
  // meanwhile): den takes 100 messages a second, and pointers can move
  // at a 120 Hz screen's pace.
  const later = (m) => {
    const p = moves.current;
    if (p && p.kind === m.kind) {
      // The one waiting goes where this one is, or scrolls as far.
      if (m.kind === "wheel") {
        p.delta_x += m.delta_x;
        p.delta_y += m.delta_y;
      } else {
        p.x = m.x;
        p.y = m.y;
      }
      return;
    }
    if (p) input(p);
    moves.current = m;
    setTimeout(() => {
      if (moves.current === m) {
        moves.current = null;
        input(m);
      }
    }, MOVES);
  };
  const flush = () => {
    if (moves.current) input(moves.current);
    moves.current = null;
  };
  const onPointerDown = (e) => {
    if (!yours || !meta.current) return;
    e.preventDefault();
    if (e.pointerType === "touch") {
      touch.current = { id: e.pointerId, x0: e.clientX, y0: e.clientY, x: e.clientX, y: e.clientY, scrolling: false };
      return;
    }
    img.current.setPointerCapture(e.pointerId);
    const p = at(e.clientX, e.clientY);
    flush();
    input({ kind: "move", ...p });
    input({ kind: "down", ...p, button: BUTTONS[e.button] || "left", click_count: Math.max(1, e.detail || 1), modifiers: modifiers(e) });
    // On a desktop, what is typed next goes to the page.
    if (matchMedia("(pointer: fine)").matches && keys.current) keys.current.focus({ preventScroll: true });
  };
  const onPointerMove = (e) => {
    if (!yours || !meta.current) return;
    const t = touch.current;
    if (e.pointerType === "touch") {
      if (!t || t.id !== e.pointerId) return;
      if (!t.scrolling && Math.hypot(e.clientX - t.x0, e.clientY - t.y0) < TAP) return;
      t.scrolling = true;
      const k = scale();
      const p = at(t.x0, t.y0);
      later({ kind: "wheel", ...p, delta_x: (t.x - e.clientX) * k, delta_y: (t.y - e.clientY) * k });
      t.x = e.clientX;
      t.y = e.clientY;
      return;
    }
    later({ kind: "move", ...at(e.clientX, e.clientY) });
  };
  const onPointerUp = (e) => {
    if (!yours || !meta.current) return;
    const p = at(e.clientX, e.clientY);
    if (e.pointerType === "touch") {
      const t = touch.current;
      touch.current = null;
      if (!t || t.scrolling) return flush();
      // A tap: the mouse goes there and clicks.
      input({ kind: "move", ...p });
      input({ kind: "down", ...p, button: "left", click_count: 1 });
      input({ kind: "up", ...p, button: "left", click_count: 1 });
      return;
    }
    flush();
    input({ kind: "up", ...p, button: BUTTONS[e.button] || "left", click_count: Math.max(1, e.detail || 1), modifiers: modifiers(e) });
  };
  const onWheel = (e) => {
    if (!yours || !meta.current) return;
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1;
    const k = scale();
    later({ kind: "wheel", ...at(e.clientX, e.clientY), delta_x: e.deltaX * unit * k, delta_y: e.deltaY * unit * k });
  };

  // The typing field: keys that are not text go as keys, text as text
  // (a phone's keyboard says little in its key events, and composes
  // words before it gives them).
  const key = (name, code, mods, text) => {
    input({ kind: "keydown", key: name, code, modifiers: mods, ...(text ? { text } : {}) });
    input({ kind: "keyup", key: name, code, modifiers: mods });
  };
  const reset = () => {
    const el = keys.current;
    el.value = KEEP;
    el.setSelectionRange(KEEP.length, KEEP.length);
  };
  const onKeyDown = (e) => {
    if (e.isComposing || e.keyCode === 229) return;
    const mods = modifiers(e);
    // Shift+Tab leaves the field, so that the keyboard can reach den's
    // own buttons.
    if (e.key === "Tab" && e.shiftKey) return;
    if (KEYS.has(e.key) || ((e.ctrlKey || e.metaKey) && e.key.length === 1)) {
      e.preventDefault();
      key(e.key, e.code, mods, e.key === "Enter" ? "\r" : "");
    }
  };
  const onInput = (e) => {
    if (e.isComposing) return;
    const v = keys.current.value;
    if (!v.startsWith(KEEP)) key("Backspace", "Backspace", 0, "");
    else if (v.length > KEEP.length) input({ kind: "text", text: v.slice(KEEP.length) });
    reset();
  };
  useEffect(() => {
    if (yours && keys.current) reset();
  }, [yours]);

  const title = frame ? frame.title || frame.url || "a page" : "";
  return html`
    <div class="browser-panel">
      <div class="browser-bar">
        <div class="browser-page">
          <div class="browser-title" title=${frame ? frame.title : ""}>${frame ? frame.title || "Untitled page" : ""}</div>
          <div class="browser-url" title=${frame ? frame.url : ""}>${frame ? frame.url : ""}</div>
        </div>
        ${yours
          ? html`<button class="primary" onClick=${() => send({ type: "release" })}>Give back</button>`
          : html`<button class="primary" disabled=${ended || !frame} onClick=${() => { setNote(""); send({ type: "take" }); }}>Take over</button>`}
      </div>
      ${yours && html`<p class="browser-note" role="status">You have the browser: the agent waits until you give it back.</p>`}
      ${!yours && control.control && !ended && html`<p class="browser-note" role="status">Taken over on another screen: the agent waits.</p>`}
      ${yours && html`<label class="browser-type">Type into the page
        <input ref=${keys} class="browser-keys" type="text" autocomplete="off" autocapitalize="off" spellcheck="false"
          enterkeyhint="enter" onKeyDown=${onKeyDown} onInput=${onInput} onCompositionEnd=${onInput} /></label>`}
      ${note && html`<p class="browser-note muted" role="status">${note} <button class="link" onClick=${() => setNote("")}>OK</button></p>`}
      ${(status || ended) && html`<p class="muted browser-status" role="status">${status || "The browser view ended."}
        ${ended && html` <button class="link" onClick=${() => setAttempt((n) => n + 1)}>Reconnect</button>`}</p>`}
      <div class=${"browser-screen" + (yours ? " taken" : "")}>
        ${frame
          ? html`<img ref=${img} src=${frame.src} alt=${"The agent's browser, showing " + title} draggable="false"
              onLoad=${() => { const u = urls.current; while (u.length > 1 && u[0] !== frame.src) URL.revokeObjectURL(u.shift()); }}
              onPointerDown=${onPointerDown} onPointerMove=${onPointerMove} onPointerUp=${onPointerUp}
              onPointerCancel=${() => { touch.current = null; }} onWheel=${onWheel}
              onContextMenu=${(e) => yours && e.preventDefault()} />`
          : !ended && html`<p class="muted">Waiting for the page…</p>`}
      </div>
    </div>`;
}
