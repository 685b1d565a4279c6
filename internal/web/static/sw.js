// den's service worker: it keeps the app shell (the page, its code and
// styles) so that den opens at once and offline, never caches the API
// (sessions, events and files always come from den), and shows the
// notifications den pushes (push.js subscribes).
const CACHE = "den-shell-v5";
const SHELL = ["/", "/app/style.css", "/app/app.js", "/app/api.js", "/app/markdown.js", "/app/files.js", "/app/terminal.js", "/app/browser.js", "/app/settings.js", "/app/schedules.js", "/app/distill.js", "/app/device.js", "/app/push.js", "/app/icon.svg",
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

// sameOrigin is url if it is den's own, else den's start page: a
// notification only ever opens den.
function sameOrigin(url) {
  try {
    const u = new URL(url || "/", self.location.origin);
    return u.origin === self.location.origin ? u.href : self.location.origin + "/";
  } catch {
    return self.location.origin + "/";
  }
}

// A push from den is {title, body, tag, session_id, url, kind}. It is
// always shown: browsers require it (subscriptions are userVisibleOnly).
// Chrome would let a push go unshown while den's tab is the visible one,
// but Safari counts every push without a notification against the site
// and revokes its subscription after a few, and an iPhone's suspended
// home-screen app can still report itself focused. So when a den window
// is visible and focused the notification is shown silently (no sound,
// no vibration) rather than skipped.
self.addEventListener("push", (e) => {
  let p = {};
  try {
    p = e.data ? e.data.json() : {};
  } catch {
    p = { body: e.data ? e.data.text() : "" };
  }
  e.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((list) => {
    const seen = list.some((c) => c.visibilityState === "visible" && c.focused);
    const options = { body: p.body || "", icon: "/app/icon.svg", data: { url: sameOrigin(p.url) }, silent: seen };
    if (p.tag) {
      options.tag = p.tag; // a newer outcome of the same session replaces the older
      options.renotify = !seen;
    }
    return self.registration.showNotification(p.title || "den", options);
  }));
});

// A click focuses a den window and takes it to the notification's
// session, or opens one there.
self.addEventListener("notificationclick", (e) => {
  e.notification.close();
  const url = sameOrigin(e.notification.data && e.notification.data.url);
  e.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(async (list) => {
    const dens = list.filter((c) => new URL(c.url).origin === self.location.origin);
    const c = dens.find((c) => c.focused) || dens.find((c) => c.visibilityState === "visible") || dens[0];
    if (!c) return self.clients.openWindow(url);
    const focused = await c.focus().catch(() => c);
    if (focused.url !== url) {
      // navigate works on a window this worker controls; another is
      // left where it was.
      await focused.navigate(url).catch(() => {});
    }
  }));
});
