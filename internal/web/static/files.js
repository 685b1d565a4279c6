// The files panel: the session's /workspace to browse, preview,
// download, upload into and make folders in. Everything goes through
// the file routes, which refuse links the computer planted.
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";

const html = htm.bind(h);

// fileURL is the route of path (below /workspace) in session id.
export function fileURL(id, path, inline) {
  const rel = path.split("/").filter(Boolean).map(encodeURIComponent).join("/");
  return `/api/v1/sessions/${encodeURIComponent(id)}/files/${rel}${inline ? "?inline=1" : ""}`;
}

const TEXT = /\.(txt|md|markdown|log|json|ya?ml|toml|ini|csv|tsv|sh|bash|py|js|mjs|ts|go|rs|c|h|cpp|java|rb|php|html?|css|xml|sql|diff|patch|conf|cfg|env)$/i;
const IMAGE = /\.(png|jpe?g|gif|webp|bmp|avif)$/i;
const PDF = /\.pdf$/i;

async function request(method, url, body) {
  const resp = await fetch(url, { method, body, credentials: "same-origin" });
  if (!resp.ok) {
    let msg = `den answered ${resp.status}`;
    try {
      msg = (await resp.json()).error.message;
    } catch {
      /* not JSON */
    }
    throw new Error(msg);
  }
  return resp;
}

// folderOf is the folder the panel opens on for start, a path below
// /workspace: its folder when it names a file (a name with a dot).
function folderOf(start) {
  return start.includes(".") ? start.split("/").slice(0, -1).join("/") : start;
}

export function Files({ id, onError, start }) {
  const [path, setPath] = useState(folderOf(start || ""));
  const [listing, setListing] = useState(null);
  const [preview, setPreview] = useState(null);
  const [busy, setBusy] = useState(false);

  const load = async (p) => {
    try {
      const resp = await request("GET", fileURL(id, p) + (p ? "/" : ""));
      setListing(await resp.json());
    } catch (e) {
      onError(e.message);
    }
  };
  useEffect(() => {
    load(path);
  }, [id, path]);
  useEffect(() => {
    if (start !== undefined) {
      const dir = folderOf(start);
      setPath(dir);
      if (dir !== start) show(start);
    }
  }, [start]);

  const show = async (p) => {
    const name = p.split("/").pop();
    if (IMAGE.test(name)) return setPreview({ path: p, kind: "image" });
    if (PDF.test(name)) return setPreview({ path: p, kind: "pdf" });
    try {
      const resp = await request("GET", fileURL(id, p));
      const size = Number(resp.headers.get("Content-Length") || 0);
      const type = resp.headers.get("Content-Type") || "";
      if (size > 1 << 20 || !(TEXT.test(name) || type.startsWith("text/") || type.includes("json"))) {
        return setPreview({ path: p, kind: "other", size });
      }
      setPreview({ path: p, kind: "text", text: await resp.text() });
    } catch (e) {
      onError(e.message);
    }
  };
  const upload = async (files) => {
    setBusy(true);
    try {
      for (const f of files) await request("PUT", fileURL(id, (path ? path + "/" : "") + f.name), f);
      await load(path);
    } catch (e) {
      onError(e.message);
    } finally {
      setBusy(false);
    }
  };
  const mkdir = async () => {
    const name = prompt("New folder's name");
    if (!name) return;
    try {
      await request("PUT", fileURL(id, (path ? path + "/" : "") + name) + "/", "");
      await load(path);
    } catch (e) {
      onError(e.message);
    }
  };

  const crumbs = path.split("/").filter(Boolean);
  return html`
    <div class="files-panel">
      <nav class="crumbs" aria-label="Folder">
        <button class="link" onClick=${() => { setPath(""); setPreview(null); }}>workspace</button>
        ${crumbs.map((c, i) => html`<span>/</span><button class="link" onClick=${() => { setPath(crumbs.slice(0, i + 1).join("/")); setPreview(null); }}>${c}</button>`)}
      </nav>
      <div class="row files-actions">
        <label class="button-like">Upload<input type="file" multiple hidden aria-label="Upload files" onChange=${(e) => { upload([...e.target.files]); e.target.value = ""; }} /></label>
        <button onClick=${mkdir}>New folder</button>
        <button onClick=${() => load(path)}>Refresh</button>
        ${busy && html`<span class="muted">Uploading…</span>`}
      </div>
      ${preview
        ? html`<div class="preview">
            <div class="row"><button onClick=${() => setPreview(null)}>Back</button>
              <a class="button-like" href=${fileURL(id, preview.path)} download>Download</a>
              <code class="preview-name">${preview.path}</code></div>
            ${preview.kind === "text" && html`<pre class="preview-text">${preview.text}</pre>`}
            ${preview.kind === "image" && html`<img class="preview-image" alt=${preview.path} src=${fileURL(id, preview.path, true)} />`}
            ${preview.kind === "pdf" && html`<iframe class="preview-pdf" title=${preview.path} src=${fileURL(id, preview.path, true)}></iframe>`}
            ${preview.kind === "other" && html`<p class="muted">No preview for this file${preview.size ? ` (${preview.size} bytes)` : ""}: download it.</p>`}
          </div>`
        : html`<ul class="entries">
            ${listing && listing.entries.length === 0 && html`<li class="muted">This folder is empty.</li>`}
            ${listing && listing.entries.map((e) => html`<li key=${e.name}>
              <button class="entry" onClick=${() => (e.type === "dir" ? setPath((path ? path + "/" : "") + e.name) : e.type === "file" && show((path ? path + "/" : "") + e.name))}>
                <span class="entry-icon" aria-hidden="true">${e.type === "dir" ? "▸" : e.type === "symlink" ? "↪" : "·"}</span>
                <span class="entry-name">${e.name}${e.type === "dir" ? "/" : ""}</span>
                <span class="entry-meta">${e.type === "symlink" ? "→ " + (e.target || "") : e.type === "file" ? human(e.size) : ""}</span>
              </button></li>`)}
          </ul>`}
    </div>`;
}

function human(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1 << 20)).toFixed(1)} MB`;
}
