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
const liveStreams = new Map();
function liveConnect(url) {
  if (liveStreams.has(url)) return;
  const es = new EventSource(url);
  liveStreams.set(url, es);
  const fire = () => {
    for (const el of document.querySelectorAll("[data-live]")) {
      if (el.dataset.live === url) htmx.trigger(el, "live");
    }
  };
  es.addEventListener("change", fire);
  es.addEventListener("open", fire);
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
