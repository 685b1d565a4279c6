// Markdown as the agent writes it, made safe: marked renders, DOMPurify
// removes anything that could run (the agent's text is not trusted: a
// page it read may have put words in its mouth), and highlight.js, loaded
// the first time a code block needs it, colours code.
import { marked } from "/app/vendor/marked.esm.js";
import DOMPurify from "/app/vendor/purify.es.mjs";

marked.setOptions({ gfm: true, breaks: false });

// Links open elsewhere and never tell the page where they came from;
// paths into the computer's folders become links to them (the app
// opens them in its preview).
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") || "";
    if (/^(\/workspace|\/den\/attachments)\//.test(href)) {
      node.setAttribute("data-den-path", href);
    } else {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  }
});

const PATH = /(^|[\s(`'"])((?:\/workspace|\/den\/attachments)\/[^\s`'")<>]+[^\s`'")<>.,:;!?])/g;

// render turns the agent's Markdown into sanitized HTML.
export function render(text) {
  const html = marked.parse(text || "", { async: false });
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ["style", "form", "input", "button"] });
}

// linkPaths marks paths under /workspace and /den/attachments in the
// text nodes of el (not inside code or links) as links to them.
export function linkPaths(el) {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("a, pre") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const n of nodes) {
    const text = n.nodeValue;
    PATH.lastIndex = 0;
    if (!PATH.test(text)) continue;
    PATH.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(PATH)) {
      const start = m.index + m[1].length;
      frag.append(text.slice(at, start));
      const a = document.createElement("a");
      a.href = "#";
      a.textContent = m[2];
      a.setAttribute("data-den-path", m[2]);
      frag.append(a);
      at = start + m[2].length;
    }
    frag.append(text.slice(at));
    n.replaceWith(frag);
  }
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
