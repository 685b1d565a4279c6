// Make a skill: the model turns the open chat into a skill draft (as
// den skills distill does), which the user reads, each file and what
// the scan found, before installing or discarding it. The draft is the
// model's writing, not to be trusted: it is shown as text, never as
// HTML, with invisible characters made visible.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { api } from "/app/api.js";

const html = htm.bind(h);

// NAME is a skill's name: lowercase letters, digits and single hyphens.
const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

// HIDDEN are characters that change what text seems to say without
// showing: zero-width ones, bidirectional controls, Unicode tags.
const HIDDEN = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]/gu;

// visible is text with each hidden character written as its code.
const visible = (text) => text.replace(HIDDEN, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);

function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// Distill is the sheet: a name to give (or not), then the model at
// work, then the draft with Install and Discard. The drafts waiting for
// review (from earlier, or from den skills distill) are listed first,
// each to open the same way. Closing it while the model writes stops
// the request.
export function Distill({ id, onClose, onOpen }) {
  const [waiting, setWaiting] = useState([]);
  const [name, setName] = useState("");
  const [draft, setDraft] = useState(null);
  const [writing, setWriting] = useState(false);
  const [failed, setFailed] = useState("");
  const [confirm, setConfirm] = useState(""); // "flagged" or "exists": installing needs the user's yes
  const [granted, setGranted] = useState({}); // what the user said yes to: allow_high, replace
  const [busy, setBusy] = useState(false);
  const [installed, setInstalled] = useState(null);
  const abort = useRef(null);
  useEffect(() => () => abort.current && abort.current.abort(), []);
  useEffect(() => {
    api.drafts().then((r) => setWaiting(r.drafts || []), () => {});
  }, []);

  const review = async (w) => {
    setBusy(true);
    setFailed("");
    try {
      setDraft(await api.draft(w.agent, w.name));
    } catch (err) {
      setFailed(err.message);
    } finally {
      setBusy(false);
    }
  };

  const write = async (e) => {
    e.preventDefault();
    const n = name.trim();
    if (n && !NAME.test(n)) {
      setFailed("A skill's name is lowercase letters, digits and single hyphens, such as weekly-report.");
      return;
    }
    setFailed("");
    setWriting(true);
    const ctl = new AbortController();
    abort.current = ctl;
    try {
      setDraft(await api.distill(id, n ? { name: n } : {}, ctl.signal));
    } catch (err) {
      if (!ctl.signal.aborted) setFailed(err.message);
    } finally {
      abort.current = null;
      if (!ctl.signal.aborted) setWriting(false);
    }
  };
  const stop = () => {
    if (abort.current) abort.current.abort();
    setWriting(false);
  };
  const install = async (more = {}) => {
    const grant = { ...granted, ...more };
    setGranted(grant);
    setBusy(true);
    setFailed("");
    try {
      setInstalled(await api.installDraft(draft.agent, draft.name, grant));
      setConfirm("");
    } catch (err) {
      if (err.code === "flagged" || err.code === "exists") setConfirm(err.code);
      else setFailed(err.message);
    } finally {
      setBusy(false);
    }
  };
  const discard = async () => {
    if (!window.confirm(`Discard the draft ${visible(draft.name)}? Its files are removed.`)) return;
    setBusy(true);
    setFailed("");
    try {
      await api.discardDraft(draft.agent, draft.name);
      onClose();
    } catch (err) {
      setFailed(err.message);
      setBusy(false);
    }
  };

  let body;
  if (installed) {
    body = html`<div class="card" role="status">
      <p class="installed">Installed <strong>${visible(installed.name)}</strong> for agent ${draft.agent}.</p>
      <p class="muted">Its sessions see it from their next turn on; <code>/${installed.name}</code> in a message uses it.</p>
      <button type="button" class="primary" onClick=${onClose}>Done</button></div>`;
  } else if (draft) {
    body = html`<${Draft} d=${draft} onOpen=${onOpen} />
      ${failed && html`<p class="banner error" role="alert">${failed}</p>`}
      ${confirm
        ? html`<div class="card confirm" role="alert">
            <p>${confirm === "flagged"
              ? `The scan found ${plural(draft.high, "high-severity finding")}. Install ${draft.name} anyway?`
              : `Agent ${draft.agent} has a skill named ${draft.name}. Install this draft in its place?`}</p>
            <div class="actions">
              <button type="button" class="danger" disabled=${busy} onClick=${() => install(confirm === "flagged" ? { allow_high: true } : { replace: true })}>${confirm === "flagged" ? "Install anyway" : "Replace it"}</button>
              <button type="button" disabled=${busy} onClick=${() => setConfirm("")}>Cancel</button></div></div>`
        : html`<div class="actions">
            ${draft.high > 0 && html`<p class="high-note">The scan found ${plural(draft.high, "high-severity finding")}: read ${draft.high === 1 ? "it" : "them"} before you install.</p>`}
            <button type="button" class="primary" disabled=${busy} onClick=${() => (draft.high > 0 && !granted.allow_high ? setConfirm("flagged") : install())}>Install</button>
            <button type="button" class="danger" disabled=${busy} onClick=${discard}>Discard</button></div>`}`;
  } else if (writing) {
    body = html`<div class="card writing" role="status">
      <div class="thinking-dots" aria-hidden="true"><span></span><span></span><span></span></div>
      <p>The model is writing the draft from this chat. This can take a minute or two.</p>
      <button type="button" onClick=${stop}>Stop</button></div>`;
  } else {
    body = html`${waiting.length > 0 && html`<section class="card waiting" aria-label="Drafts waiting for review">
        <h3>Drafts waiting for review</h3>
        <ul>${waiting.map((w) => html`<li key=${w.agent + "/" + w.name}>
          <div class="what"><strong>${visible(w.name)}</strong>
            <span class="muted"> · agent ${w.agent}${w.error ? "" : " · " + plural(w.files, "file")}</span>
            ${w.high > 0 && html` <span class="label bad">${plural(w.high, "high finding")}</span>`}
            <p class=${w.error ? "muted error" : "muted"}>${w.error ? w.error : visible(w.description)}</p></div>
          <button type="button" disabled=${busy || !!w.error} onClick=${() => review(w)}>Review</button></li>`)}</ul></section>`}
      <form class="card" aria-label="Make a skill" onSubmit=${write}>
      <p>The model reads this chat and writes a skill from it: a SKILL.md with the steps and the pitfalls met, and
        scripts from the commands that worked. You read the draft before anything is installed.</p>
      <label>Name (optional)
        <input name="name" value=${name} onInput=${(e) => setName(e.target.value)} placeholder="the model picks one"
          autocapitalize="none" autocomplete="off" spellcheck="false" maxlength="64" /></label>
      ${failed && html`<p class="banner error" role="alert">${failed}</p>`}
      <button type="submit" class="primary">Write the draft</button></form>`;
  }
  return html`
    <div class="settings distill" role="dialog" aria-modal="true" aria-label="Make a skill">
      <header class="panel-top"><h2>Make a skill</h2>
        <button class="icon" aria-label="Close" onClick=${onClose}>×</button></header>
      <div class="settings-body">${body}</div>
    </div>`;
}

// Draft shows a draft: its name and description, what the scan found,
// and each file, SKILL.md open.
function Draft({ d, onOpen }) {
  return html`
    <section class="card draft" aria-label="Draft">
      <h3>${visible(d.name)}</h3>
      <p class="description">${visible(d.description)}</p>
      <p class="muted">A draft for agent ${d.agent}, kept outside its computer: nothing is installed until you say so.</p>
      ${d.request_session && html`<button type="button" class="link request" onClick=${() => onOpen(d.request_session)}>Open the model's request</button>`}
    </section>
    <section class="card" aria-label="Findings">
      <h3>What the scan found</h3>
      ${d.findings.length === 0
        ? html`<p class="muted">Nothing.</p>`
        : html`<ul class="findings">${d.findings.map((f, i) => html`<li key=${i}>
            <span class=${"label " + (f.severity === "high" ? "bad" : f.severity === "medium" ? "warn" : "")}>${f.severity}</span>
            ${" "}<code>${visible(f.file)}${f.line ? ":" + f.line : ""}</code> ${f.reason}
            ${f.excerpt && html`<code class="excerpt">${visible(f.excerpt)}</code>`}</li>`)}</ul>`}
    </section>
    <section aria-label="Files">
      <h3>${plural(d.files.length, "file")}</h3>
      ${d.files.map((f, i) => html`<details class="draft-file" key=${f.path} open=${i === 0}>
        <summary><span class="path">${visible(f.path)}</span>
          <span class="muted">${size(f.size)}${f.exec ? " · executable" : ""}</span></summary>
        ${f.binary
          ? html`<p class="muted note">Not text: not shown.</p>`
          : html`<pre class="draft-text">${visible(f.text)}</pre>`}
        ${f.cut && html`<p class="muted note">Only its start is shown.</p>`}
      </details>`)}
    </section>`;
}
