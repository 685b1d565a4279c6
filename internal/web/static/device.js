// The phone as a device: host commands in the agent's computer
// (den-location, den-clipboard, den-camera, den-speak --browser) reach
// this browser through den, as device_request events on the page's
// stream of every session's events; device_done says a request ended
// (another browser answered, or the command gave up). den's permission
// gate has decided on each request before it comes; the browser's own
// permission prompt comes on top.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { api } from "/app/api.js";

const html = htm.bind(h);

async function answer(id, body) {
  await fetch(`/api/v1/device/${encodeURIComponent(id)}`, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  }).catch(() => {});
}

// claim makes this browser the one that acts on a request; false when
// another took it first or it ended.
async function claim(id) {
  try {
    const r = await fetch(`/api/v1/device/${encodeURIComponent(id)}/claim`, { method: "POST", credentials: "same-origin" });
    return r.ok;
  } catch {
    return false;
  }
}

function location(req) {
  if (!("geolocation" in navigator)) return answer(req.id, { error: "this browser has no location" });
  navigator.geolocation.getCurrentPosition(
    (pos) => answer(req.id, { data: { latitude: pos.coords.latitude, longitude: pos.coords.longitude, accuracy_m: pos.coords.accuracy } }),
    (err) => answer(req.id, { error: err.message || "the location was refused" }),
    { enableHighAccuracy: true, timeout: 25000, maximumAge: 0 });
}

// clipboard reads or writes the clipboard, which a browser allows a
// page that has the focus (the one the user is looking at).
function clipboard(req) {
  const args = req.args || {};
  if (!navigator.clipboard) return answer(req.id, { error: "this browser gives pages no clipboard" });
  // A page the user is not looking at stays silent: the one in front
  // answers (or, with none, den says so when it gives up).
  if (!document.hasFocus()) return;
  const done = args.action === "write"
    ? navigator.clipboard.writeText(String(args.text ?? "")).then(() => ({ data: { written: true } }))
    : navigator.clipboard.readText().then((text) => ({ data: { text } }));
  done.then((body) => answer(req.id, body), (err) => answer(req.id, { error: err.message || "the clipboard was refused" }));
}

// ---------------------------------------------------------------- prompts

// Requests that need the user's hand (a photo; speech a phone would not
// start by itself) are shown as prompts until answered or ended.
let prompts = [];
const watchers = new Set();
function setPrompts(list) {
  prompts = list;
  for (const w of watchers) w(prompts);
}
const addPrompt = (p) => setPrompts([...prompts.filter((x) => x.id !== p.id), p]);
const dropPrompt = (id) => setPrompts(prompts.filter((x) => x.id !== id));

// The prompt is the page's own; the system notification says one waits
// when the page is hidden.
function tell(title, body) {
  if (!document.hidden || !("Notification" in window) || Notification.permission !== "granted") return;
  try {
    new Notification(title, { body, icon: "/app/icon.svg", tag: "device" });
  } catch {
    /* some browsers only notify from a service worker */
  }
}

function camera(req) {
  const prompt = (req.args && req.args.prompt) || "";
  addPrompt({ id: req.id, kind: "camera", session: req.session_id, prompt });
  tell("den asks for a photo", prompt);
}

// speak says the text with the browser's speech synthesis. Only a page
// the user can hear speaks, and only one: it claims the request first.
async function speak(req) {
  if (document.visibilityState !== "visible") return;
  if (!("speechSynthesis" in window)) return answer(req.id, { error: "this browser cannot speak" });
  if (!(await claim(req.id))) return;
  say(req, () => addPrompt({ id: req.id, kind: "speak", text: req.args.text, req }));
}

// say speaks req's text and answers; blocked is called when the
// browser wants a tap first (phones start no sound by themselves).
function say(req, blocked) {
  const a = req.args || {};
  const u = new SpeechSynthesisUtterance(String(a.text || ""));
  if (a.lang) u.lang = a.lang;
  if (a.rate) u.rate = a.rate;
  const voices = speechSynthesis.getVoices();
  const voice = (a.voice && voices.find((v) => v.name === a.voice)) || (a.lang && voices.find((v) => v.lang === a.lang)) || null;
  if (voice) u.voice = voice;
  u.onend = () => {
    dropPrompt(req.id);
    answer(req.id, { data: { voice: voice ? voice.name : "" } });
  };
  u.onerror = (e) => {
    if (e.error === "not-allowed" && blocked) return blocked();
    if (e.error === "interrupted" || e.error === "canceled") return;
    dropPrompt(req.id);
    answer(req.id, { error: `the browser could not speak: ${e.error || "unknown error"}` });
  };
  speechSynthesis.speak(u);
}

// ---------------------------------------------------------------- the stream

const handlers = { location, clipboard, camera, speak };

// handleDeviceRequest does what a request asks, and answers it.
export function handleDeviceRequest(req) {
  const h = handlers[req.kind];
  if (h) h(req);
  else answer(req.id, { error: `this page does not know ${req.kind}` });
}

// handleDeviceDone drops the prompt of a request that ended.
export function handleDeviceDone(d) {
  dropPrompt(d.id);
}

// DevicePrompts shows what waits for the user's hand.
export function DevicePrompts({ onError }) {
  const [list, setList] = useState(prompts);
  useEffect(() => {
    watchers.add(setList);
    setList(prompts);
    return () => watchers.delete(setList);
  }, []);
  if (!list.length) return null;
  return html`<div class="device-prompts">
    ${list.map((p) => (p.kind === "camera"
      ? html`<${CameraPrompt} key=${p.id} p=${p} onError=${onError} />`
      : html`<${SpeakPrompt} key=${p.id} p=${p} />`))}
  </div>`;
}

function CameraPrompt({ p, onError }) {
  const shoot = useRef(null);
  const pick = useRef(null);
  const [state, setState] = useState("");
  const send = async (files) => {
    const file = files && files[0];
    if (!file) return;
    if (!(await claim(p.id))) return dropPrompt(p.id);
    setState("Sending the photo…");
    try {
      const r = await api.attach(p.session, [file]);
      const name = r.attachments && r.attachments[0] && r.attachments[0].name;
      await answer(p.id, name ? { data: { name } } : { error: "the photo was not saved" });
    } catch (e) {
      onError(e.message);
      await answer(p.id, { error: `the photo could not be sent: ${e.message}` });
    }
    dropPrompt(p.id);
  };
  const decline = () => {
    dropPrompt(p.id);
    answer(p.id, { error: "the user declined to take a photo" });
  };
  return html`<div class="device-prompt" role="dialog" aria-label="Photo requested">
    <p class="question">den asks for a photo</p>
    ${p.prompt && html`<p>${p.prompt}</p>`}
    ${state
      ? html`<p class="muted" role="status">${state}</p>`
      : html`<div class="row">
          <button class="primary" onClick=${() => shoot.current.click()}>Take photo</button>
          <button onClick=${() => pick.current.click()}>Choose a photo</button>
          <button class="danger" onClick=${decline}>Decline</button>
        </div>`}
    <input ref=${shoot} type="file" accept="image/*" capture="environment" hidden aria-label="Camera"
      onChange=${(e) => send(e.target.files)} />
    <input ref=${pick} type="file" accept="image/*" hidden aria-label="Photo file"
      onChange=${(e) => send(e.target.files)} />
  </div>`;
}

function SpeakPrompt({ p }) {
  const skip = () => {
    dropPrompt(p.id);
    answer(p.id, { error: "the user did not play the speech" });
  };
  return html`<div class="device-prompt" role="dialog" aria-label="Speech waiting">
    <p class="question">den wants to say something aloud</p>
    <p>${p.text}</p>
    <div class="row">
      <button class="primary" onClick=${() => say(p.req, null)}>Play</button>
      <button onClick=${skip}>Skip</button>
    </div>
  </div>`;
}
