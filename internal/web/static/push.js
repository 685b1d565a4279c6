// Web Push for this browser. Subscribed, it hears den (den-notify, an
// approval waiting, a turn done) with no den tab open: den sends each
// notification, encrypted to this browser, through the browser's push
// service, and the service worker (sw.js) shows it.
//
// Push needs a secure context (https, or localhost) with a service
// worker, Notification and PushManager; on an iPhone or iPad, den must be
// added to the Home Screen first. Every function here is safe to call
// where push is not supported: pushState answers "unsupported" and the
// others throw an Error whose message says why.

async function call(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch {
    throw new Error("den cannot be reached");
  }
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => null);
  if (!resp.ok) {
    const err = new Error((data && data.error && data.error.message) || `den answered ${resp.status}`);
    err.status = resp.status;
    throw err;
  }
  return data;
}

// pushSupported reports whether this browser, on this page, can receive
// push notifications.
export function pushSupported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

// key is den's public key as the bytes subscribe takes.
function key(b64url) {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (b64url.length % 4)) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function sameKey(buf, bytes) {
  if (!buf) return false;
  const a = new Uint8Array(buf);
  return a.length === bytes.length && a.every((v, i) => v === bytes[i]);
}

// registration is den's service worker registration, made if the page
// has not made it yet, once it is active.
async function registration() {
  let reg = await navigator.serviceWorker.getRegistration("/");
  if (!reg) reg = await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  return reg;
}

// info is GET /api/v1/push, or null when den has push off.
async function info() {
  try {
    return await call("GET", "/api/v1/push");
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

// pushState resolves to "unsupported" (this browser cannot, or den has
// push off), "denied" (notifications are blocked for den), "on" (this
// browser is subscribed with den's current key) or "off".
export async function pushState() {
  if (!pushSupported()) return "unsupported";
  const i = await info();
  if (!i) return "unsupported";
  if (Notification.permission === "denied") return "denied";
  const reg = await navigator.serviceWorker.getRegistration("/");
  const sub = reg && (await reg.pushManager.getSubscription());
  if (!sub || Notification.permission !== "granted") return "off";
  // A subscription made with another key (den's key file was replaced)
  // reaches nothing: it counts as off, and enablePush replaces it.
  return sameKey(sub.options && sub.options.applicationServerKey, key(i.public_key)) ? "on" : "off";
}

// enablePush asks for permission to notify, subscribes this browser
// with den's key and tells den; it resolves to "on". Calling it again
// is harmless (den keeps one subscription per browser).
export async function enablePush() {
  if (!pushSupported()) {
    throw new Error("This browser cannot receive push notifications here: it needs https (or localhost) and a service worker; on an iPhone, add den to the Home Screen first.");
  }
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new Error(permission === "denied" ? "Notifications are blocked for den in this browser's settings." : "Notifications were not allowed.");
  }
  const i = await info();
  if (!i) throw new Error("Push notifications are off in den's configuration ([server] push = false).");
  const serverKey = key(i.public_key);
  const reg = await registration();
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub.options && sub.options.applicationServerKey, serverKey)) {
    await sub.unsubscribe();
    sub = null;
  }
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: serverKey });
  await call("POST", "/api/v1/push/subscriptions", sub.toJSON());
  return "on";
}

// disablePush unsubscribes this browser and tells den; it resolves to
// "off".
export async function disablePush() {
  if (!pushSupported()) return "off";
  const reg = await navigator.serviceWorker.getRegistration("/");
  const sub = reg && (await reg.pushManager.getSubscription());
  if (!sub) return "off";
  const endpoint = sub.endpoint;
  await sub.unsubscribe();
  try {
    await call("DELETE", "/api/v1/push/subscriptions", { endpoint });
  } catch (e) {
    if (e.status !== 404) throw e; // den had forgotten it already
  }
  return "off";
}

// testPush has den send a test notification to every subscribed
// browser; it resolves to {sent, failed: [{endpoint_host, error}]}.
export function testPush() {
  return call("POST", "/api/v1/push/test");
}
