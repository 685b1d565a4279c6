// den's helpers, installed once per document in den's isolated world:
// the page's own scripts never see them, and what the page does to its
// own globals and prototypes does not change them.
(() => {
  if (globalThis.__den) return globalThis.__den;
  const d = { muts: 0, last: performance.now() };
  const note = (recs) => { d.muts += recs.length; d.last = performance.now(); };
  const observer = new MutationObserver(note);
  const watch = () => {
    try {
      observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    } catch (e) {}
  };
  watch();
  document.addEventListener('readystatechange', () => { d.last = performance.now(); });

  // quietNow is how long this document's DOM has been still, in ms,
  // counting its same-origin frames (each has its own helpers).
  d.quietNow = () => {
    let q = performance.now() - d.last, m = d.muts;
    for (const f of document.querySelectorAll('iframe, frame')) {
      try {
        const fd = f.contentWindow && f.contentWindow.__den;
        if (fd && fd !== d) { const [fq, fm] = fd.quietNow(); q = Math.min(q, fq); m += fm; }
      } catch (e) {}
    }
    return [q, m];
  };

  d.state = () => {
    const se = document.scrollingElement || document.documentElement || {};
    const [quiet, muts] = d.quietNow();
    return {
      muts,
      quiet,
      ready: document.readyState,
      x: Math.round(window.scrollX), y: Math.round(window.scrollY),
      w: se.scrollWidth || 0, h: se.scrollHeight || 0,
      vw: window.innerWidth, vh: window.innerHeight,
    };
  };

  // roots yields the document, its open shadow roots and the documents
  // of same-origin frames, each once, in document order.
  const roots = function* (root) {
    const stack = [root];
    while (stack.length) {
      const r = stack.shift();
      yield r;
      const walker = document.createTreeWalker(r, NodeFilter.SHOW_ELEMENT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.shadowRoot) stack.push(n.shadowRoot);
        if (n.tagName === 'IFRAME' || n.tagName === 'FRAME') {
          try { if (n.contentDocument) stack.push(n.contentDocument); } catch (e) {}
        }
      }
    }
  };

  d.find = (sel) => {
    for (const r of roots(document)) {
      const el = r.querySelector(sel);
      if (el) return el;
    }
    return null;
  };

  d.findAll = (sel, max) => {
    const out = [];
    for (const r of roots(document)) {
      for (const el of r.querySelectorAll(sel)) {
        out.push(el);
        if (out.length >= max) return out;
      }
    }
    return out;
  };

  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const s = el.ownerDocument.defaultView.getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none';
  };
  d.visible = visible;

  const short = (s, n) => {
    s = (s || '').replace(/\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  };

  // describe names an element the way a CSS selector and a person would.
  d.describe = (el) => {
    let css = el.tagName.toLowerCase();
    if (el.id) css += '#' + CSS.escape(el.id);
    else {
      for (const c of Array.from(el.classList).slice(0, 2)) css += '.' + CSS.escape(c);
      for (const a of ['name', 'type', 'aria-label', 'placeholder', 'href']) {
        const v = el.getAttribute(a);
        if (v && v.length < 40) { css += `[${a}="${v.replace(/"/g, '\\"')}"]`; break; }
      }
    }
    return { css, text: short(el.innerText || el.value || el.getAttribute('aria-label') || el.title || '', 40) };
  };

  const words = (s) => (s || '').toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 1);
  const dist = (a, b) => {
    if (a === b) return 0;
    const m = a.length, n = b.length;
    if (!m || !n) return Math.max(m, n);
    let prev = Array.from({ length: n + 1 }, (_, j) => j);
    for (let i = 1; i <= m; i++) {
      const cur = [i];
      for (let j = 1; j <= n; j++) {
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
      prev = cur;
    }
    return prev[n];
  };

  // candidates returns the elements that look most like what a selector
  // that matched nothing meant: by the words of its ids, classes,
  // attribute values and tag, against each visible element's.
  d.candidates = (sel, max) => {
    const want = words(sel);
    const tags = (sel.match(/(^|[\s>+~,(])([a-z][a-z0-9-]*)/gi) || []).map((t) => t.replace(/^[\s>+~,(]/, '').toLowerCase());
    const scored = [];
    for (const r of roots(document)) {
      for (const el of r.querySelectorAll('*')) {
        if (['SCRIPT', 'STYLE', 'HEAD', 'META', 'LINK', 'HTML', 'BODY', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName)) continue;
        const have = words([el.id, el.className && el.className.baseVal === undefined ? el.className : '',
          el.getAttribute('name'), el.getAttribute('type'), el.getAttribute('aria-label'), el.getAttribute('role'),
          el.getAttribute('placeholder'), el.getAttribute('data-testid'), el.tagName].join(' '));
        if (!have.length) continue;
        let score = 0;
        for (const w of want) {
          let best = 0;
          for (const h of have) {
            if (h === w) { best = 1; break; }
            const dd = dist(h, w);
            const sim = 1 - dd / Math.max(h.length, w.length);
            if (h.includes(w) || w.includes(h)) best = Math.max(best, 0.8);
            best = Math.max(best, sim > 0.6 ? sim : 0);
          }
          score += best;
        }
        if (tags.includes(el.tagName.toLowerCase())) score += 0.3;
        if (score > 0.5 && visible(el)) scored.push([score, el]);
      }
    }
    scored.sort((a, b) => b[0] - a[0]);
    return scored.slice(0, max).map((s) => s[1]);
  };

  // hit says whether a click at the centre of el's box reaches el (or
  // a part of it, or a label of it); otherwise it names what is on top.
  d.hit = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return { ok: false, why: 'hidden' };
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const root = el.getRootNode();
    const at = (root.elementFromPoint ? root : el.ownerDocument).elementFromPoint(x, y);
    if (!at) return { ok: false, why: 'offscreen' };
    if (at === el || el.contains(at)) return { ok: true };
    // A shadow host reached from outside its shadow tree.
    for (let h = root.host; h; h = h.getRootNode().host) if (h === at || at.contains(h)) return { ok: true };
    const label = at.closest && at.closest('label');
    if (label && label.control === el) return { ok: true };
    if (el.labels) for (const l of el.labels) if (l === at || l.contains(at)) return { ok: true };
    return { ok: false, why: 'covered', by: d.describe(at) };
  };

  // prepareType focuses el and selects its text, so that inserted text
  // replaces it (keep: leaves the caret at the end instead).
  d.prepareType = (el, keep) => {
    el.focus();
    const doc = el.ownerDocument;
    if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') {
      try {
        if (keep) el.setSelectionRange(el.value.length, el.value.length);
        else el.select();
      } catch (e) { if (!keep) el.select(); }
      return { editable: true, sensitive: el.type === 'password' };
    }
    if (el.isContentEditable) {
      const sel = doc.getSelection();
      const range = doc.createRange();
      range.selectNodeContents(el);
      if (keep) range.collapse(false);
      sel.removeAllRanges();
      sel.addRange(range);
      return { editable: true };
    }
    return { editable: doc.activeElement === el };
  };

  d.select = (el, values) => {
    if (el.tagName !== 'SELECT') return { ok: false, notSelect: true };
    const opts = Array.from(el.options);
    const norm = (s) => (s || '').replace(/\s+/g, ' ').trim().toLowerCase();
    const chosen = [], missing = [];
    const picks = new Set();
    for (const v of values) {
      const o = opts.find((o) => o.value === v) || opts.find((o) => norm(o.label) === norm(v)) ||
        opts.find((o) => norm(o.label).includes(norm(v)));
      if (o) { picks.add(o); chosen.push(o.label); } else missing.push(v);
    }
    if (missing.length || (!el.multiple && picks.size > 1)) {
      return { ok: false, missing, multiple: el.multiple, options: opts.slice(0, 30).map((o) => o.label) };
    }
    for (const o of opts) o.selected = picks.has(o);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { ok: true, chosen };
  };

  // focused is the element with the focus, inside shadow roots and
  // same-origin frames; null when it is the body.
  d.focused = () => {
    let el = document.activeElement;
    for (;;) {
      if (!el) return null;
      if (el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        let inner = null;
        try { inner = el.contentDocument && el.contentDocument.activeElement; } catch (e) {}
        if (inner && inner !== el.contentDocument.body) { el = inner; continue; }
      }
      break;
    }
    return el === el.ownerDocument.body ? null : el;
  };

  d.isFileInput = (el) => el.tagName === 'INPUT' && el.type === 'file';

  // text is the visible text of the page, shadow roots and same-origin
  // frames included.
  // (at most a million characters: what den reads must stay bounded)
  d.text = () => {
    let out = '';
    for (const r of roots(document)) {
      const t = r === document ? (document.body ? document.body.innerText : '') : (r.body ? r.body.innerText : r.textContent);
      out += '\n' + (t || '');
      if (out.length > 1e6) return out.slice(0, 1e6);
    }
    return out;
  };

  d.present = (sel) => {
    const el = d.find(sel);
    return !!el && visible(el);
  };

  // items gathers the text of the elements of sel, or of the page's
  // largest group of repeated siblings when sel is empty.
  d.items = (sel) => {
    if (!sel) sel = d.guessItems();
    if (!sel) return { sel: '', items: [] };
    return { sel, items: d.findAll(sel, 2000).filter(visible).map((el) => short(el.innerText, 300)).filter((s) => s) };
  };

  d.guessItems = () => {
    const sig = (el) => el.tagName.toLowerCase() + Array.from(el.classList).slice(0, 2).map((c) => '.' + CSS.escape(c)).join('');
    let best = null, bestScore = 0;
    for (const r of roots(document)) {
      for (const p of r.querySelectorAll('*')) {
        if (p.children.length < 3) continue;
        const groups = new Map();
        for (const c of p.children) {
          const s = sig(c);
          groups.set(s, (groups.get(s) || 0) + (c.innerText || '').length);
        }
        for (const [s, len] of groups) {
          const n = Array.from(p.children).filter((c) => sig(c) === s).length;
          if (n < 3 || ['script', 'style', 'br', 'option'].includes(s.split('.')[0])) continue;
          const score = n * Math.min(len / n, 300);
          if (score > bestScore) { bestScore = score; best = s; }
        }
      }
    }
    return best;
  };

  // readable renders the page's main content as Markdown.
  d.readable = () => {
    const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'NAV', 'FOOTER', 'ASIDE', 'FORM', 'BUTTON', 'SELECT', 'INPUT', 'TEXTAREA', 'HEAD']);
    const hidden = (el) => {
      if (el.getAttribute('aria-hidden') === 'true' || el.hidden) return true;
      const s = getComputedStyle(el);
      return s.display === 'none' || s.visibility === 'hidden';
    };
    const score = (el) => {
      const text = (el.innerText || '').length;
      let links = 0;
      for (const a of el.querySelectorAll('a')) links += (a.innerText || '').length;
      return text - 2 * links;
    };
    let root = document.querySelector('article, main, [role=main]');
    if (!root || (root.innerText || '').length < 200) {
      let best = document.body, bestScore = -1;
      for (const el of document.querySelectorAll('div, section, article, main, td')) {
        const s = score(el);
        if (s > bestScore * 1.2 && (el.innerText || '').length > 200) { best = el; bestScore = s; }
      }
      if (!root || bestScore > score(root)) root = best;
    }
    if (!root) return '';
    const out = [];
    let line = '';
    const flush = () => { if (line.trim()) out.push(line.replace(/[ \t]+/g, ' ').trim()); line = ''; };
    const block = (s) => { flush(); out.push(s); };
    const inline = (n) => {
      if (n.nodeType === Node.TEXT_NODE) { line += n.textContent; return; }
      if (n.nodeType !== Node.ELEMENT_NODE || skip.has(n.tagName) || hidden(n)) return;
      walk(n);
    };
    const kids = (el) => { for (const c of el.childNodes) inline(c); };
    const walk = (el) => {
      const t = el.tagName;
      if (/^H[1-6]$/.test(t)) { block('#'.repeat(+t[1]) + ' ' + short(el.innerText, 300)); return; }
      switch (t) {
        case 'P': case 'DIV': case 'SECTION': case 'ARTICLE': case 'MAIN': case 'HEADER': case 'FIGURE': case 'DL': case 'DT': case 'DD':
          flush(); kids(el); flush(); return;
        case 'BR': flush(); return;
        case 'HR': block('---'); return;
        case 'LI': flush(); line = (el.parentElement && el.parentElement.tagName === 'OL' ? (Array.from(el.parentElement.children).indexOf(el) + 1) + '. ' : '- '); kids(el); flush(); return;
        case 'UL': case 'OL': flush(); kids(el); flush(); return;
        case 'PRE': block('```\n' + el.innerText.replace(/\n+$/, '') + '\n```'); return;
        case 'CODE': line += '`' + el.innerText + '`'; return;
        case 'BLOCKQUOTE': flush(); block('> ' + short(el.innerText, 2000)); return;
        case 'A': {
          const text = short(el.innerText, 200);
          const href = el.getAttribute('href') || '';
          if (text && href && !href.startsWith('javascript:') && !href.startsWith('#')) line += `[${text}](${el.href})`;
          else line += text;
          return;
        }
        case 'IMG': { const alt = el.getAttribute('alt'); if (alt) line += `![${short(alt, 100)}](${el.currentSrc || el.src})`; return; }
        case 'STRONG': case 'B': { const s = short(el.innerText, 500); if (s) line += `**${s}**`; return; }
        case 'EM': case 'I': { const s = short(el.innerText, 500); if (s) line += `_${s}_`; return; }
        case 'TABLE': {
          flush();
          const rows = Array.from(el.rows).slice(0, 100);
          rows.forEach((r, i) => {
            out.push('| ' + Array.from(r.cells).map((c) => short(c.innerText, 80).replace(/\|/g, '\\|')).join(' | ') + ' |');
            if (i === 0) out.push('|' + Array.from(r.cells).map(() => ' --- |').join(''));
          });
          return;
        }
      }
      kids(el);
    };
    walk(root);
    flush();
    return out.join('\n\n').replace(/\n{3,}/g, '\n\n').slice(0, 2e6);
  };

  globalThis.__den = d;
  return d;
})()
