// Schedules: the jobs den serve runs on a schedule, each with when it
// runs next and how its last run went; a form to add one; pause,
// resume, run now, stop the run in progress and remove; and each job's
// history (every time it was due: scheduled, started, ended, status,
// delivery, cost, session).
// The list follows the scheduler's events, so a run shows as it goes.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { api, follow } from "/app/api.js";

const html = htm.bind(h);

const WHEN = [
  ["cron", "At times (cron)", "0 7 * * *"],
  ["every", "Every", "2h"],
  ["at", "Once, at", ""],
  ["in", "Once, in", "20m"],
];

// zone is this browser's time zone, which a new job's cron or one-shot
// time is read in unless the form says another.
const zone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

function when(t) {
  if (!t) return "—";
  const d = new Date(t);
  const opts = { weekday: "short", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" };
  if (d.getFullYear() !== new Date().getFullYear()) opts.year = "numeric";
  return d.toLocaleString(undefined, opts);
}

function clock(t) {
  return t ? new Date(t).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" }) : "…";
}

function money(n) {
  return "$" + (n || 0).toFixed(4);
}

export function Schedules({ agent, agents, onError, onClose, onOpen }) {
  const [jobs, setJobs] = useState(null);
  const [open, setOpen] = useState(null); // the job whose history shows
  const [runs, setRuns] = useState([]);
  const [note, setNote] = useState("");
  const [failed, setFailed] = useState("");
  const openRef = useRef(open);
  openRef.current = open;

  const load = async () => {
    try {
      const r = await api.schedules();
      setJobs(r.schedules || []);
      if (openRef.current) {
        const h = await api.scheduleRuns(openRef.current);
        setRuns(h.runs || []);
      }
    } catch (e) {
      onError(e.message);
    }
  };
  useEffect(() => {
    load();
    // A change, a run or a delivery: read the list again (once for a
    // burst).
    let t = null;
    const f = follow("/api/v1/events", 0, (e) => {
      if (e.type === "schedule" || e.type === "schedule_run" || e.type === "schedule_delivery") {
        clearTimeout(t);
        t = setTimeout(load, 150);
      }
    });
    return () => {
      clearTimeout(t);
      f.close();
    };
  }, []);
  useEffect(() => {
    setRuns([]);
    if (open) api.scheduleRuns(open).then((h) => setRuns(h.runs || []), (e) => onError(e.message));
  }, [open]);

  // act runs a change and says how it went.
  const act = async (what, fn) => {
    try {
      await fn();
      setFailed("");
      setNote(what);
      await load();
      return true;
    } catch (e) {
      setNote("");
      setFailed(e.message);
      return false;
    }
  };

  return html`
    <div class="settings schedules">
      <header class="panel-top"><h2>Schedules</h2>
        <button class="icon" aria-label="Close schedules" onClick=${onClose}>×</button></header>
      <div class="settings-body">
        ${note && html`<p class="banner" role="status">${note}</p>`}
        ${failed && html`<p class="banner error" role="alert">${failed}</p>`}
        <section aria-labelledby="s-jobs"><h3 id="s-jobs">Jobs</h3>
          ${jobs && jobs.length === 0 && html`<p class="muted">No jobs yet. den runs them while den serve runs, and tells you how each run went.</p>`}
          <ul class="jobs">${(jobs || []).map((j) => html`<${Job} key=${j.id} j=${j} act=${act} open=${open === j.id}
            onHistory=${() => setOpen(open === j.id ? null : j.id)} runs=${open === j.id ? runs : null} onOpen=${onOpen} />`)}</ul>
        </section>
        <${AddJob} agent=${agent} agents=${agents} act=${act} />
      </div>
    </div>`;
}

// AddJob is the form of a new job: what to ask, when, and the checks
// and delivery a person most often wants; the rest under "More".
function AddJob({ agent, agents, act }) {
  const [kind, setKind] = useState("cron");
  const [value, setValue] = useState("0 7 * * *");
  const [tz, setTz] = useState(zone());
  const [f, setF] = useState({ name: "", prompt: "", verify: "", deliver: "notify", speak: false, agent, session: "", model: "",
    budget: "", misfire: "run-once", approvals: "deny" });
  const set = (k) => (e) => setF({ ...f, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    const body = { agent: f.agent || agent, prompt: f.prompt, [kind]: value, deliver: f.deliver, speak: f.speak,
      misfire: f.misfire, approvals: f.approvals };
    if (kind === "cron" || kind === "at") body.tz = tz;
    for (const k of ["name", "verify", "session", "model", "budget"]) if (f[k]) body[k] = f[k];
    const ok = await act(`Job ${f.name || "added"} added.`, () => api.addSchedule(body));
    if (ok) setF({ ...f, name: "", prompt: "", verify: "" });
  };
  return html`<section aria-labelledby="s-add"><h3 id="s-add">Add a job</h3>
    <form class="card" aria-label="Add a job" onSubmit=${submit}>
      <label>What to ask the agent<textarea name="prompt" rows="3" required value=${f.prompt} onInput=${set("prompt")}
        placeholder="Read my feeds and summarise them"></textarea></label>
      <div class="pair">
        <label>When<select name="kind" value=${kind} onChange=${(e) => {
          const k = e.target.value;
          setKind(k);
          setValue((WHEN.find((w) => w[0] === k) || [])[2] || "");
        }}>${WHEN.map(([k, label]) => html`<option value=${k}>${label}</option>`)}</select></label>
        <label>${kind === "cron" ? "Cron expression" : kind === "at" ? "Time" : "Duration"}
          <input name="when" required value=${value} onInput=${(e) => setValue(e.target.value)}
            type=${kind === "at" ? "datetime-local" : "text"} placeholder=${kind === "cron" ? "minute hour day month weekday" : "2h, 30m, 1d"} /></label>
        ${(kind === "cron" || kind === "at") && html`<label>Time zone<input name="tz" value=${tz} onInput=${(e) => setTz(e.target.value)} /></label>`}
      </div>
      <div class="pair">
        <label>Name<input name="name" value=${f.name} onInput=${set("name")} placeholder="Morning digest" /></label>
        <label>Agent<select name="agent" value=${f.agent || agent} onChange=${set("agent")}>
          ${(agents.length ? agents : [{ name: agent }]).map((a) => html`<option value=${a.name}>${a.name}</option>`)}</select></label>
      </div>
      <label>Check, run in the computer after the turn (ok only if it exits 0)<input name="verify" value=${f.verify} onInput=${set("verify")}
        placeholder="test -s /workspace/digest.md" /></label>
      <div class="pair">
        <label>Deliver the answer<select name="deliver" value=${f.deliver} onChange=${set("deliver")}>
          <option value="notify">to this page and my devices</option><option value="none">nowhere (failures still notify)</option></select></label>
        <label class="check"><input type="checkbox" name="speak" checked=${f.speak} onChange=${set("speak")} /> Also read it aloud</label>
      </div>
      <details><summary>More</summary>
        <div class="pair">
          <label>Continue the session<input name="session" value=${f.session} onInput=${set("session")} placeholder="a fresh one each run" /></label>
          <label>Model<input name="model" list="model-options" value=${f.model} onInput=${set("model")} placeholder="the agent's" /></label>
          <label>Budget per run<input name="budget" value=${f.budget} onInput=${set("budget")} placeholder="0.50 or 200k tokens" /></label>
        </div>
        <div class="pair">
          <label>Times missed while den was down<select name="misfire" value=${f.misfire} onChange=${set("misfire")}>
            <option value="run-once">run once, late</option><option value="run-all">run each, late</option><option value="skip">skip</option></select></label>
          <label>What would ask you<select name="approvals" value=${f.approvals} onChange=${set("approvals")}>
            <option value="deny">is denied</option><option value="wait">waits for my answer</option></select></label>
        </div>
      </details>
      <button type="submit" class="primary">Add</button>
    </form></section>`;
}

function stateBadge(j) {
  if (j.state === "paused") return html`<span class="badge">paused</span>`;
  if (j.state === "running") return html`<span class="badge running">running</span>`;
  if (j.state === "done") return html`<span class="badge">done</span>`;
  return null;
}

function lastRun(u) {
  if (!u) return "never run";
  let s = `${u.status} ${when(u.ended || u.started || u.scheduled)}`;
  if (u.late) s += ` (${u.late} late)`;
  if (u.delivery === "failed") s += " · not delivered";
  return s;
}

function Job({ j, act, open, onHistory, runs, onOpen }) {
  const name = j.title;
  // Stop shows while the newest run is in progress (a job runs one at a time).
  const running = j.last && j.last.status === "running";
  return html`<li class="card job" aria-label=${"Job " + name}>
    <div class="job-head"><strong class="grow">${name}</strong>${stateBadge(j)}</div>
    <div class="muted">${j.when}${j.agent !== "default" ? ` · ${j.agent}` : ""}</div>
    <dl class="job-facts">
      <dt>Next</dt><dd class="next">${j.state === "paused" ? "paused" : when(j.next_run)}</dd>
      <dt>Last</dt><dd class=${"last " + (j.last ? j.last.status : "")}>${lastRun(j.last)}</dd>
    </dl>
    <div class="actions">
      ${running && html`<button type="button" class="danger" onClick=${() => act(`${name}: run stopped.`,
        () => api.stopRun(j.id, j.last.id))}>Stop</button>`}
      ${j.state === "paused"
        ? html`<button type="button" onClick=${() => act(`${name} resumed.`, () => api.scheduleAction(j.id, "resume"))}>Resume</button>`
        : j.state !== "done" && html`<button type="button" onClick=${() => act(`${name} paused.`, () => api.scheduleAction(j.id, "pause"))}>Pause</button>`}
      <button type="button" onClick=${() => act(`${name} runs now.`, () => api.scheduleAction(j.id, "run"))}>Run now</button>
      <button type="button" aria-expanded=${open} onClick=${onHistory}>History</button>
      <button type="button" class="danger" onClick=${() => confirm(`Remove ${name} and its history?`) &&
        act(`${name} removed.`, () => api.deleteSchedule(j.id))}>Remove</button>
    </div>
    ${open && html`<${History} runs=${runs || []} onOpen=${onOpen} />`}
  </li>`;
}

// History is a job's runs, newest first, each on a few short lines so
// that it reads on a phone: when it was scheduled, how it ended and
// whether the user heard of it; when it ran (and how late), its cost
// and its session; why.
function History({ runs, onOpen }) {
  if (!runs.length) return html`<p class="muted">No runs yet.</p>`;
  return html`<ol class="runs" aria-label="History">${runs.map((u) => html`<li key=${u.id} class=${u.status}>
    <div><strong>${when(u.scheduled)}</strong>${" · "}<span class="status">${u.status}${u.attempt > 1 ? ` (attempt ${u.attempt})` : ""}${
      u.cause === "manual" || u.cause === "catch-up" ? ` · ${u.cause}` : ""}</span>${" · "}<span class="delivery"
      title=${u.delivery_error || u.delivery_detail || ""}>${u.delivery === "none" ? "nothing delivered" : u.delivery}</span></div>
    ${u.started && html`<div class="muted">${clock(u.started)} – ${clock(u.ended)}${u.late ? ` (${u.late} late)` : ""} · ${money(u.cost_usd)}
      ${u.session_id && html` · <a href=${"#" + u.session_id} onClick=${(e) => { e.preventDefault(); onOpen(u.session_id); }}>Open the session</a>`}</div>`}
    ${u.reason && html`<div class="muted reason">${u.reason}</div>`}
    ${u.delivery_error && u.delivery !== "delivered" && html`<div class="muted reason">Delivery: ${u.delivery_error}</div>`}
  </li>`)}</ol>`;
}
