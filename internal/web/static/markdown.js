// Markdown as the agent writes it, made safe: marked renders, DOMPurify
// removes anything that could run (the agent's text is not trusted: a
// page it read may have put words in its mouth), and highlight.js, loaded
// the first time a code block needs it, colours code.
import { marked } from "/app/vendor/marked.esm.js";
import DOMPurify from "/app/vendor/purify.es.mjs";

marked.setOptions({ gfm: true, breaks: false });

// den:// URLs name the agent's files (see internal/resource): KINDS are
// the folders they name.
const KINDS = ["workspace", "attachments", "offloads", "browser", "memory", "skills", "shared"];

// parseDen reads a den:// URL as strictly as den's server does (which
// checks it again): the kind and the decoded path beneath its folder,
// or null.
export function parseDen(s) {
  if (typeof s !== "string" || s.length > 8192 || !s.startsWith("den://")) return null;
  const rest = s.slice("den://".length);
  const slash = rest.indexOf("/");
  const kind = slash < 0 ? rest : rest.slice(0, slash);
  const raw = slash < 0 ? "" : rest.slice(slash + 1);
  if (!KINDS.includes(kind) || /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%\u00a1-\uffff]|[\s\u2028\u2029]/.test(raw)) return null;
  let path;
  try {
    path = decodeURIComponent(raw);
  } catch {
    return null;
  }
  if (raw !== "") {
    path = path.replace(/\/$/, "");
    if (path === "") return null;
  }
  const bad = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
  if (path !== "" && path.split("/").some((c) => c === "" || c === "." || c === ".." || bad.test(c))) return null;
  return { kind, path };
}

// Links open elsewhere and never tell the page where they came from;
// paths into the computer's folders become links to them (the app
// opens them in its preview). den:// links and images are the one
// scheme kept besides DOMPurify's own, on <a href> and <img src> only,
// and only when they parse; resources() makes them point at den.
DOMPurify.addHook("uponSanitizeAttribute", (node, data) => {
  if (data.attrName === "data-den-url" || data.attrName === "data-den-path") {
    data.keepAttr = false; // only den's hooks set these
  } else if (((node.tagName === "A" && data.attrName === "href") || (node.tagName === "IMG" && data.attrName === "src")) && parseDen(data.attrValue)) {
    data.forceKeepAttr = true;
  }
});
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "IMG") {
    const src = (node.getAttribute("src") || "").trim();
    if (parseDen(src)) {
      node.removeAttribute("src");
      node.setAttribute("data-den-url", src);
    }
  }
  if (node.tagName === "A") {
    const href = (node.getAttribute("href") || "").trim();
    if (parseDen(href)) {
      node.removeAttribute("href");
      node.setAttribute("data-den-url", href);
    } else if (/^(\/workspace|\/den\/attachments)\//.test(href)) {
      node.setAttribute("data-den-path", href);
    } else {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  }
});

const PATH = /(^|[\s(`'"])((?:\/workspace|\/den\/attachments)\/[^\s`'")<>]+[^\s`'")<>.,:;!?])/g;
// DEN finds den:// URLs in text: up to a space or what ends a URL in
// Markdown, not counting the punctuation that ends a sentence.
const DEN = /(^|[^\w/])(den:\/\/[a-z]+(?:\/[^\s`'"<>()[\]{}]*[^\s`'"<>()[\]{}.,:;!?*])?\/?)/g;

// render turns the agent's Markdown into sanitized HTML.
export function render(text) {
  const html = marked.parse(text || "", { async: false });
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ["style", "form", "input", "button"] });
}

// linkPaths marks den:// URLs, and paths under /workspace and
// /den/attachments, in the text nodes of el (not inside code blocks or
// links) as links to them.
export function linkPaths(el) {
  linkText(el, DEN, (url) => {
    if (!parseDen(url)) return null;
    const a = document.createElement("a");
    a.textContent = url;
    a.setAttribute("data-den-url", url);
    return a;
  });
  linkText(el, PATH, (p) => {
    const a = document.createElement("a");
    a.href = "#";
    a.textContent = p;
    a.setAttribute("data-den-path", p);
    return a;
  });
}

// linkText replaces each match of re (group 1 what precedes, group 2
// the text to link) in the text nodes of el outside code blocks and
// links with the element link makes of it, unless it makes null.
function linkText(el, re, link) {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("a, pre") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const n of nodes) {
    const text = n.nodeValue;
    re.lastIndex = 0;
    if (!re.test(text)) continue;
    re.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(re)) {
      const a = link(m[2]);
      if (!a) continue;
      const start = m.index + m[1].length;
      frag.append(text.slice(at, start), a);
      at = start + m[2].length;
    }
    frag.append(text.slice(at));
    n.replaceWith(frag);
  }
}

// resourceURL is den's route for the den:// URL url, read in session.
export function resourceURL(session, url, inline) {
  return `/api/v1/resources?url=${encodeURIComponent(url)}&session=${encodeURIComponent(session)}${inline ? "&inline=1" : ""}`;
}

const PREVIEWS = [
  [/\.(png|jpe?g|gif|webp|svg)$/i, "image"],
  [/\.(mp3|wav|ogg|oga|opus|m4a|aac|flac)$/i, "audio"],
  [/\.(mp4|webm|ogv|mov|m4v)$/i, "video"],
  [/\.pdf$/i, "pdf"],
  [/\.html?$/i, "html"],
];

function previewKind(path) {
  const found = PREVIEWS.find(([re]) => re.test(path));
  return found ? found[1] : null;
}

// resources makes the den:// links and images of el, rendered for
// session, point at den: a file of the workspace opens the files
// panel, any other a download; images show from the computer. Under
// the text, each file linked is previewed once: an image (an SVG only
// as an <img>, which runs nothing), audio, video, a PDF, or an HTML
// page in a sandboxed frame, which runs none of its scripts and has an
// origin of its own. Without a session, den:// links stay inert.
export function resources(el, session) {
  if (!session || el.querySelector(":scope > .den-previews")) return;
  const shown = new Set();
  for (const img of el.querySelectorAll("img[data-den-url]")) {
    const url = img.getAttribute("data-den-url");
    const r = parseDen(url);
    if (r && previewKind(r.path) === "image") {
      img.src = resourceURL(session, url, true);
      shown.add(url);
    } else if (r) {
      // Not an image: a link to it, previewed below like any other.
      const a = document.createElement("a");
      a.textContent = img.alt || url;
      a.setAttribute("data-den-url", url);
      img.replaceWith(a);
    }
  }
  const box = document.createElement("div");
  box.className = "den-previews";
  for (const a of el.querySelectorAll("a[data-den-url]")) {
    const url = a.getAttribute("data-den-url");
    const r = parseDen(url);
    if (!r) continue;
    const name = r.path.split("/").pop() || r.kind;
    if (r.kind === "workspace") {
      a.href = "#";
      a.setAttribute("data-den-path", "/workspace/" + r.path);
    } else {
      a.href = resourceURL(session, url, false);
      a.setAttribute("download", name);
    }
    if (shown.has(url)) continue;
    shown.add(url);
    const p = preview(previewKind(r.path), resourceURL(session, url, false), name);
    if (p) box.append(p);
  }
  if (box.childElementCount) el.append(box);
}

// preview is the element that shows a file of kind (see PREVIEWS) from
// src, named name, or null.
function preview(kind, src, name) {
  let e;
  switch (kind) {
    case "image":
      e = document.createElement("img");
      e.src = src + "&inline=1";
      e.alt = name;
      e.loading = "lazy";
      break;
    case "audio":
    case "video":
      e = document.createElement(kind);
      e.controls = true;
      e.preload = "metadata";
      e.src = src;
      e.setAttribute("aria-label", name);
      break;
    case "pdf":
    case "html":
      e = document.createElement("iframe");
      // An HTML page gets no permission at all: no scripts, no origin
      // of den's, no forms, no popups. (A PDF viewer does not work in a
      // sandbox; den serves PDFs with nothing of den's origin to run.)
      if (kind === "html") e.setAttribute("sandbox", "");
      e.src = src + "&inline=1";
      e.title = name;
      e.loading = "lazy";
      e.referrerPolicy = "no-referrer";
      break;
    default:
      return null;
  }
  const fig = document.createElement("figure");
  fig.className = "den-preview den-preview-" + kind;
  fig.append(e);
  return fig;
}

let hljs = null;
const LANGS = {
  bash: "bash", sh: "bash", shell: "bash", zsh: "bash", console: "shell", python: "python", py: "python",
  javascript: "javascript", js: "javascript", typescript: "typescript", ts: "typescript", json: "json",
  go: "go", rust: "rust", rs: "rust", c: "c", h: "c", cpp: "cpp", "c++": "cpp", java: "java", yaml: "yaml",
  yml: "yaml", toml: "ini", ini: "ini", xml: "xml", html: "xml", css: "css", sql: "sql", diff: "diff",
  patch: "diff", markdown: "markdown", md: "markdown", dockerfile: "dockerfile", text: "plaintext", plaintext: "plaintext",
};

// highlight colours the code blocks of el and gives each a copy button.
export async function highlight(el) {
  for (const pre of el.querySelectorAll("pre")) {
    if (pre.dataset.denCode) continue;
    pre.dataset.denCode = "1";
    const btn = document.createElement("button");
    btn.className = "copy";
    btn.type = "button";
    btn.textContent = "Copy";
    btn.setAttribute("aria-label", "Copy code");
    btn.addEventListener("click", () => {
      const code = pre.querySelector("code");
      navigator.clipboard && navigator.clipboard.writeText(code ? code.textContent : pre.textContent).then(
        () => { btn.textContent = "Copied"; setTimeout(() => (btn.textContent = "Copy"), 1500); },
        () => { btn.textContent = "Copy failed"; });
    });
    pre.append(btn);
  }
  const blocks = [...el.querySelectorAll("pre code[class*='language-']")].filter((c) => !c.dataset.highlighted);
  if (!blocks.length) return;
  if (!hljs) hljs = (await import("/app/vendor/highlight.core.min.js")).default;
  for (const code of blocks) {
    const m = /language-([\w+-]+)/.exec(code.className);
    const name = m && LANGS[m[1].toLowerCase()];
    if (!name) continue;
    if (!hljs.getLanguage(name)) {
      try {
        const mod = await import(`/app/vendor/hljs/${name}.min.js`);
        hljs.registerLanguage(name, mod.default);
      } catch {
        continue;
      }
    }
    if (code.isConnected && !code.dataset.highlighted) hljs.highlightElement(code);
  }
}
