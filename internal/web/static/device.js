// The phone as a device: host commands in the agent's computer
// (den-location) reach this browser through den. den's permission gate
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

const handlers = { location };

// connectDevice keeps this browser connected as a device while the page
// is open (EventSource reconnects by itself).
export function connectDevice() {
  const es = new EventSource("/api/v1/device");
  es.addEventListener("request", (m) => {
    let req;
    try {
      req = JSON.parse(m.data);
    } catch {
      return;
    }
    const h = handlers[req.kind];
    if (h) h(req);
    else answer(req.id, { error: `this page does not know ${req.kind}` });
  });
  return () => es.close();
}
