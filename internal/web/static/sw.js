// den's service worker: it keeps the app shell (the page, its code and
// styles) so that den opens at once and offline, and never caches the
// API: sessions, events and files always come from den.
const CACHE = "den-shell-v1";
const SHELL = ["/", "/app/style.css", "/app/app.js", "/app/api.js", "/app/markdown.js", "/app/files.js", "/app/terminal.js", "/app/settings.js", "/app/device.js", "/app/icon.svg",
  "/app/vendor/preact.module.js", "/app/vendor/hooks.module.js", "/app/vendor/htm.module.js"];

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (e) => {
  e.waitUntil(caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

// The shell is asked for over the network first (den answers 304 when
// nothing changed) and taken from the cache only when den is out of
// reach.
self.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== "GET" || url.origin !== location.origin) return;
  if (url.pathname.startsWith("/api/") || url.pathname.startsWith("/v1/") || url.pathname === "/metrics") return;
  if (url.pathname !== "/" && !url.pathname.startsWith("/app/")) return;
  if (url.search) return; // the login URL, among others: den's to answer

  e.respondWith(fetch(e.request).then((resp) => {
    if (resp.ok) {
      const copy = resp.clone();
      caches.open(CACHE).then((c) => c.put(e.request, copy));
    }
    return resp;
  }).catch(() => caches.match(e.request).then((hit) => hit || Response.error())));
});
