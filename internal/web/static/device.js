// The phone as a device: host commands in the agent's computer
// (den-location) reach this browser through den, as device_request
// events on the page's stream of every session's events. den's permission gate
// has decided on each request before it comes; the browser's own
// permission prompt comes on top.

async function answer(id, body) {
  await fetch(`/api/v1/device/${encodeURIComponent(id)}`, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  }).catch(() => {});
}

function location(req) {
  if (!("geolocation" in navigator)) return answer(req.id, { error: "this browser has no location" });
  navigator.geolocation.getCurrentPosition(
    (pos) => answer(req.id, { data: { latitude: pos.coords.latitude, longitude: pos.coords.longitude, accuracy_m: pos.coords.accuracy } }),
    (err) => answer(req.id, { error: err.message || "the location was refused" }),
    { enableHighAccuracy: true, timeout: 25000, maximumAge: 0 });
}

// clipboard reads or writes the clipboard, which a browser allows a
// page that has the focus (the one the user is looking at).
function clipboard(req) {
  const args = req.args || {};
  if (!navigator.clipboard) return answer(req.id, { error: "this browser gives pages no clipboard" });
  // A page the user is not looking at stays silent: the one in front
  // answers (or, with none, den says so when it gives up).
  if (!document.hasFocus()) return;
  const done = args.action === "write"
    ? navigator.clipboard.writeText(String(args.text ?? "")).then(() => ({ data: { written: true } }))
    : navigator.clipboard.readText().then((text) => ({ data: { text } }));
  done.then((body) => answer(req.id, body), (err) => answer(req.id, { error: err.message || "the clipboard was refused" }));
}

const handlers = { location, clipboard };

// handleDeviceRequest does what a request asks, and answers it.
export function handleDeviceRequest(req) {
  const h = handlers[req.kind];
  if (h) h(req);
  else answer(req.id, { error: `this page does not know ${req.kind}` });
}
