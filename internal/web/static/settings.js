// Settings: the agents (model, trust, instructions, network and its
// egress policy, mounts, permissions), the models and groups, the
// providers and the secrets (keys and values written, never shown
// again), the standing approvals, usage and cost per day and per
// session, this device's notifications, and den's token.
// Changes go through PATCH /api/v1/config, checked as den config set
// checks them: a change den refuses leaves the file as it was.
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";
import { api } from "/app/api.js";
import { pushState, enablePush, disablePush, testPush } from "/app/push.js";

const html = htm.bind(h);

async function request(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const resp = await fetch(path, init);
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new Error((data && data.error && data.error.message) || `den answered ${resp.status}`);
  return data;
}

// change sets and removes config keys in one request.
const change = (set, unset) => request("PATCH", "/api/v1/config", unset && unset.length ? { set, unset } : { set });

// key quotes the parts of a config key that are not bare.
const key = (...parts) => parts.map((p) => (/^[A-Za-z0-9_-]+$/.test(p) ? p : JSON.stringify(p))).join(".");

const TRUST = ["restricted", "trusted", "full"];
const DECISIONS = ["allow", "ask", "deny"];
// The commands and actions a permission may name.
const COMMANDS = [
  "den-open", "den-notify", "den-ask", "den-model list", "den-model run", "den-sessions list", "den-sessions search",
  "den-sessions show", "den-sessions send", "den-config get", "den-config set", "den-clipboard read", "den-clipboard write",
  "den-speak", "den-location", "den-camera",
];

const SECTIONS = [["s-agents", "Agents"], ["s-models", "Models"], ["s-providers", "Providers"], ["s-secrets", "Secrets"], ["s-mcp", "MCP"], ["s-rules", "Approvals"],
  ["s-usage", "Usage"], ["s-device", "This device"], ["s-access", "Access"]];

export function Settings({ onError, onClose, onOpen }) {
  const [agents, setAgents] = useState([]);
  const [catalog, setCatalog] = useState(null);
  const [saved, setSaved] = useState("");
  const [failed, setFailed] = useState("");
  const reload = () => {
    api.agents().then((r) => setAgents(r.agents || []), (e) => onError(e.message));
    request("GET", "/api/v1/models").then(setCatalog, () => {});
  };
  useEffect(reload, []);
  // save runs a change and says how it went.
  const save = async (what, fn) => {
    try {
      await fn();
      setFailed("");
      setSaved(`${what} saved.`);
      reload();
      return true;
    } catch (e) {
      setSaved("");
      setFailed(e.message);
      return false;
    }
  };
  return html`
    <div class="settings">
      <header class="panel-top"><h2>Settings</h2>
        <button class="icon" aria-label="Close settings" onClick=${onClose}>×</button></header>
      <nav class="settings-nav" aria-label="Settings sections">
        ${SECTIONS.map(([id, label]) => html`<a href=${"#" + id} onClick=${(e) => {
          e.preventDefault();
          document.getElementById(id)?.scrollIntoView({ block: "start" });
        }}>${label}</a>`)}
      </nav>
      <div class="settings-body">
        ${saved && html`<p class="banner" role="status">${saved}</p>`}
        ${failed && html`<p class="banner error" role="alert">${failed}</p>`}
        <section aria-labelledby="s-agents"><h3 id="s-agents">Agents</h3>
          <datalist id="model-options">
            ${catalog && (catalog.groups || []).map((g) => html`<option value=${g.name}>group: ${(g.members || []).join(", ")}</option>`)}
            ${catalog && (catalog.models || []).filter((m) => m.available).map((m) => html`<option value=${m.ref} />`)}
          </datalist>
          ${agents.map((a) => html`<${AgentForm} key=${a.name} a=${a} save=${save} fallback=${catalog && catalog.default_model} />`)}
        </section>
        <${Models} catalog=${catalog} save=${save} />
        <${Providers} catalog=${catalog} save=${save} />
        <${Secrets} agents=${agents} save=${save} />
        <${MCP} agents=${agents} />
        <${Rules} onError=${onError} save=${save} />
        <${Usage} onOpen=${onOpen} />
        <section aria-labelledby="s-device"><h3 id="s-device">This device</h3>
          <${NotifyToggle} />
          <${PushToggle} />
        </section>
        <${Access} save=${save} />
      </div>
    </div>`;
}

// ---------------------------------------------------------------- agents

function AgentForm({ a, save, fallback }) {
  const [model, setModel] = useState(a.model || "");
  const [trust, setTrust] = useState(a.trust || "trusted");
  const [network, setNetwork] = useState(a.network || "on");
  const [egress, setEgress] = useState(a.egress || "open");
  const [allow, setAllow] = useState((a.allow || []).join("\n"));
  const [remember, setRemember] = useState(a.remember !== false);
  const [browse, setBrowse] = useState(a.browser !== false);
  const [instructions, setInstructions] = useState(a.instructions || "");
  const [mounts, setMounts] = useState(a.mounts || []);
  const [perms, setPerms] = useState(Object.entries(a.permissions || {}));
  const [mount, setMount] = useState({ host: "", guest: "", ro: true });
  const prefix = ["agents", a.name];
  const submit = (e) => {
    e.preventDefault();
    const set = {};
    const unset = [];
    const put = (k, v, was) => {
      if (v === was) return;
      if (v === "" || (Array.isArray(v) && !v.length)) {
        if (was !== undefined && was !== "" && !(Array.isArray(was) && !was.length)) unset.push(key(...prefix, k));
      } else {
        set[key(...prefix, k)] = v;
      }
    };
    put("model", model.trim(), a.model || "");
    put("trust", trust, a.trust || "trusted");
    put("network", network, a.network || "on");
    if (network === "on") {
      // egress = "off" is the network off: turning it on sets a policy.
      put("egress", egress, a.network === "off" ? "" : a.egress || "open");
      put("allow", allow.split(/[\s,]+/).filter(Boolean), a.allow || []);
    }
    if (remember !== (a.remember !== false)) set[key(...prefix, "remember")] = remember;
    if (browse !== (a.browser !== false)) set[key(...prefix, "browser")] = browse;
    put("instructions", instructions, a.instructions || "");
    if (JSON.stringify(mounts) !== JSON.stringify(a.mounts || [])) put("mounts", mounts, a.mounts || []);
    const was = a.permissions || {};
    const now = Object.fromEntries(perms.filter(([c]) => c.trim()));
    for (const [c, d] of Object.entries(now)) if (was[c] !== d) set[key(...prefix, "permissions", c)] = d;
    for (const c of Object.keys(was)) if (!(c in now)) unset.push(key(...prefix, "permissions", c));
    if (Object.keys(set).length || unset.length) save(`Agent ${a.name}`, () => change(set, unset));
  };
  const addMount = () => {
    if (!mount.host.startsWith("/") || !mount.guest.startsWith("/")) return;
    setMounts([...mounts, `${mount.host}:${mount.guest}:${mount.ro ? "ro" : "rw"}`]);
    setMount({ host: "", guest: "", ro: true });
  };
  return html`<form class="card" onSubmit=${submit} aria-label=${"Agent " + a.name}>
    <h4>${a.name}</h4>
    <label>Model <input name="model" value=${model} list="model-options" autocomplete="off" placeholder=${fallback ? `${fallback} (den's choice)` : "provider/model or a group"}
      onInput=${(e) => setModel(e.target.value)} /></label>
    <div class="pair">
      <label>Trust <select name="trust" value=${trust} onChange=${(e) => setTrust(e.target.value)}>
        ${TRUST.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Network <select name="network" value=${network} onChange=${(e) => setNetwork(e.target.value)}>
        <option value="on">on</option><option value="off">off</option></select></label>
    </div>
    ${network === "on" && html`<div class="pair">
      <label>Egress <select name="egress" value=${egress} onChange=${(e) => setEgress(e.target.value)}>
        <option value="open">open: every host, recorded</option><option value="allowlist">allowlist: only the hosts below</option>
        <option value="ask">ask: the hosts below, then ask</option></select></label>
      <label>Allowed hosts <textarea name="allow" rows="2" placeholder="pypi.org, *.github.com, db.example.com:5432"
        value=${allow} onInput=${(e) => setAllow(e.target.value)}></textarea></label>
    </div>`}
    <label class="check"><input type="checkbox" name="remember" checked=${remember} onChange=${(e) => setRemember(e.target.checked)} />
      Memory: remember across sessions (/den/memory; each chat can turn it off)</label>
    <label class="check"><input type="checkbox" name="browser" checked=${browse} onChange=${(e) => setBrowse(e.target.checked)} />
      Browser: a web browser of its own (logins kept for this agent; from the next chat)</label>
    <label>Instructions <textarea name="instructions" rows="4" placeholder="Extra instructions for this agent's system prompt"
      value=${instructions} onInput=${(e) => setInstructions(e.target.value)}></textarea></label>
    ${a.instructions_file && html`<p class="muted">Also read from ${a.instructions_file}.</p>`}
    <fieldset><legend>Folders of this machine in the computer</legend>
      <ul class="rows">${mounts.map((m, i) => html`<li key=${m}><code>${m}</code>
        <button type="button" class="link" aria-label=${"Remove mount " + m} onClick=${() => setMounts(mounts.filter((_, j) => j !== i))}>Remove</button></li>`)}
        ${mounts.length === 0 && html`<li class="muted">None.</li>`}</ul>
      <div class="pair">
        <label>Folder here <input name="mount_host" value=${mount.host} placeholder="/home/me/notes" onInput=${(e) => setMount({ ...mount, host: e.target.value })} /></label>
        <label>In the computer <input name="mount_guest" value=${mount.guest} placeholder="/mnt/notes" onInput=${(e) => setMount({ ...mount, guest: e.target.value })} /></label>
      </div>
      <label class="check"><input type="checkbox" checked=${mount.ro} onChange=${(e) => setMount({ ...mount, ro: e.target.checked })} /> Read-only</label>
      <button type="button" onClick=${addMount}>Add folder</button>
    </fieldset>
    <fieldset><legend>Permissions (overrides of the trust level)</legend>
      <datalist id="command-options">${COMMANDS.map((c) => html`<option value=${c} />`)}</datalist>
      <ul class="rows">${perms.map(([c, d], i) => html`<li key=${i}>
        <input aria-label="Command" list="command-options" value=${c} onInput=${(e) => setPerms(perms.map((p, j) => (j === i ? [e.target.value, p[1]] : p)))} />
        <select aria-label=${"Decision for " + (c || "command")} value=${d} onChange=${(e) => setPerms(perms.map((p, j) => (j === i ? [p[0], e.target.value] : p)))}>
          ${DECISIONS.map((x) => html`<option value=${x}>${x}</option>`)}</select>
        <button type="button" class="link" aria-label=${"Remove permission " + c} onClick=${() => setPerms(perms.filter((_, j) => j !== i))}>Remove</button>
      </li>`)}</ul>
      <button type="button" onClick=${() => setPerms([...perms, ["", "ask"]])}>Add a permission</button>
    </fieldset>
    ${a.rootfs && html`<p class="muted">Computer: ${a.rootfs}${a.memory ? `, memory ${a.memory}` : ""}${a.disk ? `, disk ${a.disk}` : ""}</p>`}
    <button class="primary" type="submit">Save</button>
  </form>`;
}

// ---------------------------------------------------------------- models and groups

function Models({ catalog, save }) {
  const [name, setName] = useState("");
  const [members, setMembers] = useState("");
  const [strategy, setStrategy] = useState("fallback");
  const groups = (catalog && catalog.groups) || [];
  const models = (catalog && catalog.models) || [];
  const submit = (e) => {
    e.preventDefault();
    const list = members.split(",").map((m) => m.trim()).filter(Boolean);
    if (!/^[A-Za-z0-9_-]+$/.test(name) || !list.length) return;
    save(`Group ${name}`, () => change({ [key("groups", name, "members")]: list, [key("groups", name, "strategy")]: strategy }))
      .then((ok) => ok && (setName(""), setMembers("")));
  };
  const edit = (g) => {
    setName(g.name);
    setMembers((g.members || []).join(", "));
    setStrategy(g.strategy || "fallback");
  };
  return html`<section aria-labelledby="s-models"><h3 id="s-models">Models</h3>
    ${catalog && catalog.default_model && html`<p class="muted">With no model set, den uses ${catalog.default_model}.</p>`}
    <h4>Groups</h4>
    <p class="muted">A group is models tried in turn: when one fails, the next answers.</p>
    <ul class="rows">${groups.map((g) => html`<li key=${g.name}><strong>${g.name}</strong>
      <span class="grow">${(g.members || []).join(" → ")}${g.strategy && g.strategy !== "fallback" ? ` (${g.strategy})` : ""}</span>
      <button type="button" class="link" onClick=${() => edit(g)}>Edit</button>
      <button type="button" class="link" aria-label=${"Remove group " + g.name} onClick=${() => save(`Group ${g.name}`, () => change({}, [key("groups", g.name)]))}>Remove</button>
    </li>`)}
    ${groups.length === 0 && html`<li class="muted">No groups.</li>`}</ul>
    <form class="card" onSubmit=${submit} aria-label="Add or change a group">
      <label>Name <input name="group" value=${name} pattern="[A-Za-z0-9_-]+" required onInput=${(e) => setName(e.target.value)} placeholder="fast" /></label>
      <label>Models, in order <input name="members" value=${members} list="model-options" required onInput=${(e) => setMembers(e.target.value)}
        placeholder="gemini/gemini-3.8-flash, anthropic/claude-sonnet-5-5" /></label>
      <label>Strategy <select name="strategy" value=${strategy} onChange=${(e) => setStrategy(e.target.value)}>
        <option value="fallback">fallback: the next when one fails</option><option value="always">always: every one in turn</option></select></label>
      <button class="primary" type="submit">Save group</button>
    </form>
    <details class="catalog"><summary>Models den knows (${models.filter((m) => m.available).length} with a key)</summary>
      <table class="usage"><thead><tr><th>Model</th><th>Context</th><th>$ in / out per M</th></tr></thead>
      <tbody>${models.map((m) => html`<tr key=${m.ref} class=${m.available ? "" : "muted"}><td>${m.ref}</td>
        <td>${m.context_window ? `${Math.round(m.context_window / 1000)}k` : ""}</td>
        <td>${m.price_input != null ? `${m.price_input} / ${m.price_output}` : ""}</td></tr>`)}</tbody></table>
    </details>
  </section>`;
}

// ---------------------------------------------------------------- providers

function Providers({ catalog, save }) {
  const [name, setName] = useState("");
  const [type, setType] = useState("openai");
  const [url, setURL] = useState("");
  const [secret, setSecret] = useState("");
  const providers = (catalog && catalog.providers) || [];
  const submit = (e) => {
    e.preventDefault();
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(name)) return;
    const set = { [key("providers", name, "type")]: type };
    if (url) set[key("providers", name, "base_url")] = url;
    if (secret) set[key("providers", name, "api_key")] = secret;
    save(`Provider ${name}`, () => change(set));
    setSecret(""); // written, never shown again
  };
  return html`<section aria-labelledby="s-providers"><h3 id="s-providers">Providers</h3>
    <ul class="rows">${providers.map((p) => html`<li key=${p.name}><strong>${p.name}</strong>
      <span class="grow">${p.type}${p.base_url ? ` · ${p.base_url}` : ""} · ${p.has_key ? `key set (${p.key_from === "env" ? p.key_env || "environment" : "config file"})` : "no key"}
        ${p.problem && html`<span class="muted"> · ${p.problem}</span>`}</span>
      ${p.configured ? html`<button type="button" class="link" aria-label=${"Remove provider " + p.name}
        onClick=${() => save(`Provider ${p.name}`, () => change({}, [key("providers", p.name)]))}>Remove</button>` : null}
    </li>`)}</ul>
    <form class="card" onSubmit=${submit} aria-label="Add or change a provider">
      <label>Name <input name="provider" required pattern="[a-z0-9][a-z0-9_-]*" value=${name} onInput=${(e) => setName(e.target.value)} placeholder="local" /></label>
      <label>API <select name="type" value=${type} onChange=${(e) => setType(e.target.value)}>
        ${["openai", "openai-responses", "anthropic", "gemini"].map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>Base URL <input name="base_url" type="url" value=${url} onInput=${(e) => setURL(e.target.value)} placeholder="http://127.0.0.1:11434/v1" /></label>
      <label>API key <input name="api_key" type="password" autocomplete="off" value=${secret} onInput=${(e) => setSecret(e.target.value)}
        placeholder="written, never shown again" /></label>
      <button class="primary" type="submit">Save provider</button>
    </form>
    <p class="muted">Keys saved here are kept in den's config file (mode 0600). Keys in the environment (ANTHROPIC_API_KEY, …) are never shown.</p>
  </section>`;
}

// ---------------------------------------------------------------- MCP servers

// MCP lists each agent's MCP servers (mcp.json): where each runs —
// those on the host run with the user's rights —, its state and tools
// with what den's gate does with a call.
function MCP({ agents }) {
  const [byAgent, setByAgent] = useState({});
  useEffect(() => {
    for (const a of agents) {
      request("GET", "/api/v1/mcp?" + new URLSearchParams({ agent: a.name }))
        .then((r) => setByAgent((m) => ({ ...m, [a.name]: r.servers || [] })), () => {});
    }
  }, [agents.map((a) => a.name).join(",")]);
  const where = (s) => (s.host ? "on this machine, with your rights" : s.where === "computer" ? "in the agent's computer" : s.where);
  return html`<section aria-labelledby="s-mcp"><h3 id="s-mcp">MCP servers</h3>
    <p class="muted">From mcp.json beside den's config: <code>den mcp add</code>, <code>den mcp import</code> and <code>den mcp login</code> on the host change it.</p>
    ${agents.map((a) => html`<div key=${a.name}>
      ${agents.length > 1 && html`<h4>${a.name}</h4>`}
      <ul class="rows">${(byAgent[a.name] || []).map((s) => html`<li key=${s.name}><details class="grow"><summary>
          <strong>${s.name}</strong> <span class=${s.host ? "badge waiting" : "muted"}>${where(s)}</span>
          <span class="muted"> · ${s.state}${s.tools.length ? ` · ${s.tools.length} tools` : ""}</span></summary>
        ${s.error && html`<p class="banner error">${s.error}</p>`}
        <ul class="rows">${s.tools.map((t) => html`<li key=${t.name}><code>${t.name}</code>
          <span class="muted">${t.decision}${t.read_only ? " · reads only" : ""}</span></li>`)}</ul>
        ${s.prompts.length > 0 && html`<p class="muted">Prompts: ${s.prompts.map((p) => "/" + s.name + ":" + p.name).join(", ")}</p>`}
      </details></li>`)}
      ${byAgent[a.name] && byAgent[a.name].length === 0 && html`<li class="muted">None.</li>`}</ul>
    </div>`)}
  </section>`;
}

// ---------------------------------------------------------------- secrets

const FORMS = [["header", "Header"], ["basic", "Basic auth (value as password)"], ["query", "Query parameter"]];

// Secrets are values agents use without seeing them: each bound to
// hosts, sent by den only there. Values are written, never shown.
function Secrets({ agents, save }) {
  const [list, setList] = useState(null);
  const blank = { name: "", hosts: "", form: "header", header: "Authorization: Bearer {{value}}", basic: "", query: "", value: "", agents: "" };
  const [f, setF] = useState(blank);
  const load = () => request("GET", "/api/v1/secrets").then((r) => setList(r.secrets || []), () => setList([]));
  useEffect(() => {
    load();
  }, []);
  const submit = async (e) => {
    e.preventDefault();
    const body = { value: f.value, hosts: f.hosts.split(/[\s,]+/).filter(Boolean),
      agents: f.agents.split(/[\s,]+/).filter(Boolean) };
    body[f.form] = f[f.form].trim();
    const ok = await save(`Secret ${f.name}`, () => request("PUT", `/api/v1/secrets/${encodeURIComponent(f.name.trim())}`, body));
    if (ok) {
      setF(blank);
      load();
    }
  };
  const remove = (s) => save(`Removing ${s.name}`, () => request("DELETE", `/api/v1/secrets/${encodeURIComponent(s.name)}`)).then(load);
  const as = (s) => (s.basic ? `basic auth as ${s.basic}` : s.query ? `query parameter ${s.query}` : `header ${s.header}`);
  return html`<section aria-labelledby="s-secrets"><h3 id="s-secrets">Secrets</h3>
    <p class="muted">Values agents use without seeing them: inside, <code>$NAME</code> holds <code>den-secret:NAME</code>, and den puts
      the value into requests to the bound hosts only, over HTTPS. Values are never shown again.</p>
    <ul class="rows">${(list || []).map((s) => html`<li key=${s.name}>
      <span class="grow"><strong>${s.name}</strong> <span class="muted">to ${s.hosts.join(", ")} · ${as(s)}${s.agents.length ? " · " + s.agents.join(", ") : ""}</span></span>
      <button type="button" aria-label=${"Remove secret " + s.name} onClick=${() => remove(s)}>Remove</button></li>`)}
      ${list && list.length === 0 && html`<li class="muted">None.</li>`}</ul>
    <form class="card" onSubmit=${submit} aria-label="Set a secret">
      <div class="pair">
        <label>Name <input name="secret_name" value=${f.name} placeholder="GITHUB_TOKEN" autocomplete="off" required
          onInput=${(e) => setF({ ...f, name: e.target.value.toUpperCase() })} /></label>
        <label>Hosts <input name="secret_hosts" value=${f.hosts} placeholder="api.github.com, *.example.com" autocomplete="off" required
          onInput=${(e) => setF({ ...f, hosts: e.target.value })} /></label>
      </div>
      <div class="pair">
        <label>Sent as <select name="secret_form" value=${f.form} onChange=${(e) => setF({ ...f, form: e.target.value })}>
          ${FORMS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select></label>
        <label>${f.form === "header" ? "Header" : f.form === "basic" ? "User" : "Parameter"}
          <input name="secret_slot" value=${f[f.form]} autocomplete="off" placeholder=${f.form === "basic" ? "x-access-token" : f.form === "query" ? "key" : ""}
            onInput=${(e) => setF({ ...f, [f.form]: e.target.value })} /></label>
      </div>
      <label>Value <input name="secret_value" type="password" value=${f.value} autocomplete="new-password"
        placeholder="the token or password (empty: keep the one set)" onInput=${(e) => setF({ ...f, value: e.target.value })} /></label>
      <label>Agents <input name="secret_agents" value=${f.agents} placeholder=${"every agent" + (agents.length ? ` (${agents.map((a) => a.name).join(", ")})` : "")}
        autocomplete="off" onInput=${(e) => setF({ ...f, agents: e.target.value })} /></label>
      <button class="primary" type="submit">Set secret</button>
    </form>
  </section>`;
}

// ---------------------------------------------------------------- standing approvals

function Rules({ onError, save }) {
  const [rules, setRules] = useState(null);
  const load = () => request("GET", "/api/v1/rules").then((r) => setRules(r.rules || []), (e) => onError(e.message));
  useEffect(() => {
    load();
  }, []);
  const revoke = (r) => save(`Revoking ${r.command}`, () => request("DELETE", "/api/v1/rules",
    { agent: r.agent, command: r.command, action: r.action, subject: r.subject })).then(load);
  return html`<section aria-labelledby="s-rules"><h3 id="s-rules">Standing approvals</h3>
    <p class="muted">What was answered "Always allow" (or always deny). Revoke one, and den asks again next time.</p>
    <ul class="rows">${(rules || []).map((r) => html`<li key=${[r.agent, r.command, r.action, r.subject].join("\u0000")}>
      <span class="grow"><strong>${r.decision}</strong> ${r.command}${r.action ? " " + r.action : ""}
        ${r.subject_shown || r.subject ? html` <code>${r.subject_shown || r.subject}</code>` : ""} <span class="muted">· ${r.agent}</span></span>
      <button type="button" aria-label=${`Revoke ${r.command} ${r.action || ""}`.trim()} onClick=${() => revoke(r)}>Revoke</button>
    </li>`)}
    ${rules && rules.length === 0 && html`<li class="muted">None.</li>`}</ul>
  </section>`;
}

// ---------------------------------------------------------------- usage

function money(n) {
  return "$" + (n || 0).toFixed(n >= 100 ? 0 : n >= 1 ? 2 : 4);
}

function Usage({ onOpen }) {
  const [u, setU] = useState({});
  useEffect(() => {
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    const get = (q) => request("GET", "/api/v1/usage?" + new URLSearchParams(q)).catch(() => null);
    Promise.all([get({ since: "24h" }), get({ since: "720h" }), get({ by: "day", since: "720h", tz }), get({ by: "session", since: "720h", limit: "10" })])
      .then(([day, month, days, sessions]) => setU({ day: day && day.usage, month: month && month.usage, days: days && days.days, sessions: sessions && sessions.sessions }));
  }, []);
  const days = u.days || [];
  const most = Math.max(0, ...days.map((d) => d.cost_usd));
  const tokens = (x) => x.input_tokens + x.cache_read_tokens + x.cache_write_tokens;
  return html`<section aria-labelledby="s-usage"><h3 id="s-usage">Usage</h3>
    <table class="usage"><thead><tr><th></th><th>Requests</th><th>Tokens in / out</th><th>Cost</th></tr></thead>
    <tbody>${[["Last 24 hours", u.day], ["Last 30 days", u.month]].map(([label, x]) => html`<tr>
      <th scope="row">${label}</th><td>${x ? x.requests : "…"}</td>
      <td>${x ? `${tokens(x)} / ${x.output_tokens}` : "…"}</td>
      <td>${x ? money(x.cost_usd) : "…"}</td></tr>`)}</tbody></table>
    <h4>Per day</h4>
    ${days.length === 0 && html`<p class="muted">No usage in the last 30 days.</p>`}
    <ol class="days" aria-label="Cost per day">${days.map((d) => html`<li key=${d.day}>
      <span class="day">${d.day.slice(5)}</span>
      <span class="bar" style=${{ width: most ? `${Math.max(2, (d.cost_usd / most) * 100)}%` : "2%" }}></span>
      <span class="amount">${money(d.cost_usd)} · ${d.requests} req</span></li>`)}</ol>
    <h4>Sessions that cost the most</h4>
    <table class="usage"><thead><tr><th>Session</th><th>Requests</th><th>Tokens in / out</th><th>Cost</th></tr></thead>
    <tbody>${(u.sessions || []).map((s) => html`<tr key=${s.session_id}>
      <td>${s.session_id ? html`<a href=${"#" + s.session_id} onClick=${(e) => { e.preventDefault(); onOpen && onOpen(s.session_id); }}>${s.title || "New chat"}</a>` : "deleted sessions"}</td>
      <td>${s.requests}</td><td>${tokens(s)} / ${s.output_tokens}</td><td>${money(s.cost_usd)}</td></tr>`)}</tbody></table>
  </section>`;
}

// ---------------------------------------------------------------- this device

function NotifyToggle() {
  const supported = "Notification" in window;
  const [state, setState] = useState(supported ? Notification.permission : "unsupported");
  if (!supported) return html`<p class="muted">This browser cannot show notifications.</p>`;
  if (state === "granted") return html`<p>Notifications are on while den is open: den tells this browser when a turn is done or an approval waits.</p>`;
  if (state === "denied") return html`<p class="muted">Notifications are blocked for den in this browser's settings.</p>`;
  return html`<button onClick=${() => Notification.requestPermission().then(setState)}>Turn on notifications</button>`;
}

// PushToggle subscribes this browser to Web Push, so that it hears den
// with den's page closed.
function PushToggle() {
  const [state, setState] = useState("…");
  const [note, setNote] = useState("");
  const refresh = () => pushState().then(setState, () => setState("unsupported"));
  useEffect(() => {
    refresh();
  }, []);
  const act = (fn, done) => fn().then((r) => {
    setNote(done(r));
    refresh();
    window.dispatchEvent(new Event("den-push"));
  }, (e) => setNote(e.message));
  let body;
  if (state === "unsupported") {
    body = html`<p class="muted">Push notifications need den over https with a certificate this device trusts (Tailscale or a reverse proxy), and a browser that has them.</p>`;
  } else if (state === "denied") {
    body = html`<p class="muted">Notifications are blocked for den in this browser's settings.</p>`;
  } else if (state === "on") {
    body = html`<p>Push is on: this device hears den with den closed.</p>
      <div class="row"><button onClick=${() => act(testPush, (r) => (r && r.failed && r.failed.length ? `Sent to ${r.sent}; failed: ${r.failed.map((f) => f.error).join("; ")}` : "A test notification is on its way."))}>Send a test</button>
      <button onClick=${() => act(disablePush, () => "Push is off for this device.")}>Turn off push</button></div>`;
  } else if (state === "off") {
    body = html`<button onClick=${() => act(enablePush, () => "Push is on.")}>Turn on push notifications</button>`;
  } else {
    body = html`<p class="muted">…</p>`;
  }
  return html`<div class="push">${body}${note && html`<p class="muted" role="status">${note}</p>`}</div>`;
}

// ---------------------------------------------------------------- access

function Access({ save }) {
  const [token, setToken] = useState("");
  const [sure, setSure] = useState(false);
  const rotate = () => save("A new token", async () => {
    const r = await request("POST", "/api/v1/token/rotate");
    setToken(r.token);
    setSure(false);
  });
  return html`<section aria-labelledby="s-access"><h3 id="s-access">Access</h3>
    <p class="muted">den's token signs in browsers and scripts. A new one signs out every other browser and script; this one stays signed in.</p>
    ${token
      ? html`<div class="card"><p>The new token, shown this once:</p><code class="token">${token}</code>
          <div class="row"><button onClick=${() => navigator.clipboard && navigator.clipboard.writeText(token)}>Copy</button>
          <button onClick=${() => setToken("")}>Done</button></div></div>`
      : sure
        ? html`<div class="row"><button class="danger" onClick=${rotate}>Sign out everything else</button>
            <button onClick=${() => setSure(false)}>Cancel</button></div>`
        : html`<button onClick=${() => setSure(true)}>Rotate the token</button>`}
  </section>`;
}
