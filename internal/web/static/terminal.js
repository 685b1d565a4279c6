// The terminal: xterm.js over the daemon's WebSocket, a login shell in
// the session's computer. Its code loads the first time a terminal
// opens; the shell lives as long as the socket, which stays open while
// the panel is hidden.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";

const html = htm.bind(h);

let loaded = null;
function load() {
  if (!loaded) {
    const css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = "/app/vendor/xterm.css";
    document.head.append(css);
    loaded = Promise.all([import("/app/vendor/xterm.mjs"), import("/app/vendor/addon-fit.mjs")]);
  }
  return loaded;
}

export function Terminal({ id, visible }) {
  const box = useRef(null);
  const state = useRef({});
  const [status, setStatus] = useState("Connecting…");

  useEffect(() => {
    let disposed = false;
    load().then(([xterm, fit]) => {
      if (disposed) return;
      const term = new xterm.Terminal({ cursorBlink: true, fontSize: 14, screenReaderMode: false, convertEol: false,
        theme: matchMedia("(prefers-color-scheme: dark)").matches ? { background: "#17181a" } : { background: "#ffffff", foreground: "#1d1f21", cursor: "#1d1f21" } });
      const fitter = new fit.FitAddon();
      term.loadAddon(fitter);
      term.open(box.current);
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      const ws = new WebSocket(`${proto}//${location.host}/api/v1/sessions/${encodeURIComponent(id)}/terminal`);
      ws.binaryType = "arraybuffer";
      const enc = new TextEncoder();
      const resize = () => {
        try {
          fitter.fit();
        } catch {
          return;
        }
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
      };
      ws.onopen = () => { setStatus(""); resize(); term.focus(); };
      ws.onmessage = (m) => {
        if (typeof m.data === "string") {
          try {
            const msg = JSON.parse(m.data);
            if (msg.type === "exit") setStatus(`The shell ended (exit ${msg.code}).`);
          } catch {
            /* not ours */
          }
          return;
        }
        term.write(new Uint8Array(m.data));
      };
      ws.onclose = () => setStatus((s) => s || "The terminal closed.");
      term.onData((d) => ws.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
      const ro = new ResizeObserver(() => box.current && box.current.offsetParent && resize());
      ro.observe(box.current);
      state.current = { term, ws, ro, resize };
    });
    return () => {
      disposed = true;
      const { term, ws, ro } = state.current;
      ro && ro.disconnect();
      ws && ws.close();
      term && term.dispose();
    };
  }, [id]);
  useEffect(() => {
    if (visible && state.current.resize) {
      requestAnimationFrame(() => { state.current.resize(); state.current.term.focus(); });
    }
  }, [visible]);
  return html`<div class="terminal-panel">
    ${status && html`<p class="muted term-status" role="status">${status}</p>`}
    <div class="term" ref=${box} aria-label="Terminal"></div>
  </div>`;
}
