// Copy buttons: <button data-copy="#id"> copies the value of the element #id.
document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-copy]");
  if (!b) return;
  const el = document.querySelector(b.dataset.copy);
  if (!el) return;
  el.select();
  const done = () => { b.textContent = "Copied"; };
  if (navigator.clipboard) {
    navigator.clipboard.writeText(el.value).then(done, () => { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// Live parts: an element with data-live="/w/…/live?topic=…" (and
// hx-trigger="live") is fetched again whenever the server-sent event
// stream at that URL sends "change", and when the stream (re)opens, since
// changes may have come while it was closed. One stream per URL.
//
// htmx drops a trigger that comes while the element's request is in flight
// (hx-sync's default), so a change announced during a fetch would be lost
// and the part left stale: such a change marks the URL dirty instead, and
// the part is fetched once more when its request ends.
const liveStreams = new Map();
const liveBusy = new Map(); // url → "busy" | "dirty"
function liveFire(url) {
  if (liveBusy.has(url)) {
    liveBusy.set(url, "dirty");
    return;
  }
  for (const el of document.querySelectorAll("[data-live]")) {
    if (el.dataset.live === url) htmx.trigger(el, "live");
  }
}
function liveURLOf(ev) {
  const el = ev.detail && ev.detail.elt;
  return el && el.dataset ? el.dataset.live : undefined;
}
document.addEventListener("htmx:beforeRequest", (ev) => {
  const url = liveURLOf(ev);
  if (url && !liveBusy.has(url)) liveBusy.set(url, "busy");
});
// The request ends: its response is about to be swapped in (beforeSwap,
// while the element is still in the page: an outerHTML swap detaches it,
// and events on a detached element do not reach the document), or it
// failed.
function liveDone(ev) {
  const url = liveURLOf(ev);
  if (!url) return;
  const dirty = liveBusy.get(url) === "dirty";
  liveBusy.delete(url);
  // After the swap and settle of this response (htmx settles in 20 ms).
  if (dirty) setTimeout(() => liveFire(url), 100);
}
for (const name of ["htmx:beforeSwap", "htmx:sendError", "htmx:timeout", "htmx:sendAbort"]) {
  document.addEventListener(name, liveDone);
}
function liveConnect(url) {
  if (liveStreams.has(url)) return;
  const es = new EventSource(url);
  liveStreams.set(url, es);
  es.addEventListener("change", () => liveFire(url));
  es.addEventListener("open", () => liveFire(url));
}
document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-live]")) liveConnect(el.dataset.live);
});
// Close the streams when the page goes (so a bfcache restore reconnects).
window.addEventListener("pagehide", () => {
  for (const es of liveStreams.values()) es.close();
  liveStreams.clear();
});
window.addEventListener("pageshow", (ev) => {
  if (ev.persisted) for (const el of document.querySelectorAll("[data-live]")) liveConnect(el.dataset.live);
});
