// Settings: the agents (model, instructions, trust), the providers
// (their keys written, never shown again), usage and cost, and this
// browser's notifications. Changes go through PATCH /api/v1/config,
// checked as den config set checks them.
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";
import { api } from "/app/api.js";

const html = htm.bind(h);

async function setKeys(set) {
  const resp = await fetch("/api/v1/config", {
    method: "PATCH", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ set }),
  });
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new Error((data && data.error && data.error.message) || `den answered ${resp.status}`);
  return data;
}

async function usage(query) {
  const resp = await fetch("/api/v1/usage?" + new URLSearchParams(query), { credentials: "same-origin" });
  if (!resp.ok) throw new Error(`den answered ${resp.status}`);
  return (await resp.json()).usage;
}

export function Settings({ onError, onClose }) {
  const [agents, setAgents] = useState([]);
  const [saved, setSaved] = useState("");
  const [failed, setFailed] = useState("");
  const [spend, setSpend] = useState({});
  const reload = () => api.agents().then((r) => setAgents(r.agents || []), (e) => onError(e.message));
  useEffect(() => {
    reload();
    Promise.all([usage({ since: "24h" }), usage({ since: "720h" })]).then(([day, month]) => setSpend({ day, month }), () => {});
  }, []);
  const save = async (set, what) => {
    try {
      await setKeys(set);
      setFailed("");
      setSaved(`${what} saved.`);
      reload();
    } catch (e) {
      setSaved("");
      setFailed(e.message);
    }
  };
  return html`
    <div class="settings">
      <header class="panel-top"><h2>Settings</h2>
        <button class="icon" aria-label="Close settings" onClick=${onClose}>×</button></header>
      <div class="settings-body">
        ${saved && html`<p class="banner" role="status">${saved}</p>`}
        ${failed && html`<p class="banner error" role="alert">${failed}</p>`}
        <section aria-labelledby="s-agents"><h3 id="s-agents">Agents</h3>
          ${agents.map((a) => html`<${AgentForm} key=${a.name} a=${a} save=${save} />`)}
        </section>
        <${ProviderForm} save=${save} />
        <section aria-labelledby="s-usage"><h3 id="s-usage">Usage</h3>
          <table class="usage"><thead><tr><th></th><th>Requests</th><th>Tokens in / out</th><th>Cost</th></tr></thead>
          <tbody>${[["Last 24 hours", spend.day], ["Last 30 days", spend.month]].map(([label, u]) => html`<tr>
            <th scope="row">${label}</th><td>${u ? u.requests : "…"}</td>
            <td>${u ? `${u.input_tokens + u.cache_read_tokens + u.cache_write_tokens} / ${u.output_tokens}` : "…"}</td>
            <td>${u ? "$" + u.cost_usd.toFixed(4) : "…"}</td></tr>`)}</tbody></table>
          <p class="muted">Each session's usage is in its own record (<code>den usage</code> on the host).</p>
        </section>
        <section aria-labelledby="s-device"><h3 id="s-device">This device</h3>
          <${NotifyToggle} />
          <p class="muted">To sign every device out, run <code>den token --rotate</code> on the host.</p>
        </section>
      </div>
    </div>`;
}

function AgentForm({ a, save }) {
  const [model, setModel] = useState(a.model || "");
  const [instructions, setInstructions] = useState("");
  const [trust, setTrust] = useState(a.trust || "");
  const prefix = `agents.${a.name}.`;
  const submit = (e) => {
    e.preventDefault();
    const set = {};
    if (model && model !== a.model) set[prefix + "model"] = model;
    if (instructions) set[prefix + "instructions"] = instructions;
    if (trust && trust !== a.trust) set[prefix + "trust"] = trust;
    if (Object.keys(set).length) save(set, `Agent ${a.name}`);
  };
  return html`<form class="card" onSubmit=${submit} aria-label=${"Agent " + a.name}>
    <h4>${a.name}</h4>
    <label>Model <input name="model" value=${model} placeholder="provider/model or a group" onInput=${(e) => setModel(e.target.value)} /></label>
    <label>Trust <select name="trust" value=${trust} onChange=${(e) => setTrust(e.target.value)}>
      ${["restricted", "trusted", "full"].map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    <label>Instructions <textarea name="instructions" rows="3" placeholder="Extra instructions (replace the current ones)"
      value=${instructions} onInput=${(e) => setInstructions(e.target.value)}></textarea></label>
    <button class="primary" type="submit">Save</button>
  </form>`;
}

function ProviderForm({ save }) {
  const [name, setName] = useState("");
  const [type, setType] = useState("openai");
  const [url, setURL] = useState("");
  const [key, setKey] = useState("");
  const submit = (e) => {
    e.preventDefault();
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(name)) return;
    const set = { [`providers.${name}.type`]: type };
    if (url) set[`providers.${name}.base_url`] = url;
    if (key) set[`providers.${name}.api_key`] = key;
    save(set, `Provider ${name}`);
    setKey(""); // written, never shown again
  };
  return html`<section aria-labelledby="s-providers"><h3 id="s-providers">Providers</h3>
    <form class="card" onSubmit=${submit} aria-label="Add or change a provider">
      <label>Name <input name="provider" required pattern="[a-z0-9][a-z0-9_-]*" value=${name} onInput=${(e) => setName(e.target.value)} placeholder="local" /></label>
      <label>API <select name="type" value=${type} onChange=${(e) => setType(e.target.value)}>
        ${["openai", "openai-responses", "anthropic", "gemini"].map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Base URL <input name="base_url" type="url" value=${url} onInput=${(e) => setURL(e.target.value)} placeholder="http://127.0.0.1:11434/v1" /></label>
      <label>API key <input name="api_key" type="password" autocomplete="off" value=${key} onInput=${(e) => setKey(e.target.value)}
        placeholder="written, never shown again" /></label>
      <button class="primary" type="submit">Save provider</button>
    </form>
    <p class="muted">Keys saved here are kept in den's config file (mode 0600). Keys in the environment (ANTHROPIC_API_KEY, …) are never shown.</p>
  </section>`;
}

function NotifyToggle() {
  const supported = "Notification" in window;
  const [state, setState] = useState(supported ? Notification.permission : "unsupported");
  if (!supported) return html`<p class="muted">This browser cannot show notifications.</p>`;
  if (state === "granted") return html`<p>Notifications are on: den tells this browser when a turn is done or an approval waits.</p>`;
  if (state === "denied") return html`<p class="muted">Notifications are blocked for den in this browser's settings.</p>`;
  return html`<button onClick=${() => Notification.requestPermission().then(setState)}>Turn on notifications</button>`;
}
