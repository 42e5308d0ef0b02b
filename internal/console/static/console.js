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

// Live parts: an element with data-live="/w/…/live?topic=…" is fetched
// again (its hx-get, swapped as its hx-swap and hx-select say) whenever
// the server-sent event stream at that URL sends "change", and when the
// stream (re)opens, since changes may have come while it was closed. One
// stream per URL.
//
// The fetch is htmx.ajax with the element as its source, not an htmx
// trigger: htmx installs the trigger listeners of an element it swapped in
// only when the swap settles (htmx's settle delay, 20 ms, and far later on
// a busy page), so a trigger sent in between reached an element that did
// not listen, and the change was lost (the part stayed stale until the
// next one). The element keeps hx-trigger="live" so that htmx does not
// give it its default trigger (a click).
//
// One fetch per URL at a time: a change announced while one is in flight
// marks the URL dirty, and the part is fetched once more when it ends.
const liveStreams = new Map();
const liveBusy = new Map(); // url → "busy" | "dirty"
function liveFire(url) {
  if (liveBusy.has(url)) {
    liveBusy.set(url, "dirty");
    return;
  }
  liveBusy.set(url, "busy");
  const fetches = [];
  for (const el of document.querySelectorAll("[data-live]")) {
    if (el.dataset.live === url) fetches.push(liveFetch(el));
  }
  Promise.all(fetches).then(() => {
    const dirty = liveBusy.get(url) === "dirty";
    liveBusy.delete(url);
    if (dirty) liveFire(url);
  });
}
// liveFetch fetches a live part again; the promise resolves when its
// response is swapped in or the request failed (never rejects). htmx.ajax's
// own promise settles then, except when the swap throws: its error event
// ends the wait too.
function liveFetch(el) {
  return new Promise((resolve) => {
    el.addEventListener("htmx:onLoadError", () => resolve(), { once: true });
    try {
      htmx.ajax("get", el.getAttribute("hx-get"), { source: el }).then(() => resolve(), () => resolve());
    } catch (err) {
      console.warn("live part", err);
      resolve();
    }
  });
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

// The exception page: when its live state part shows the exception no
// longer pending (the agent or another person resolved it), the guidance
// forms go, and the page says so.
document.addEventListener("htmx:afterSwap", () => {
  const live = document.getElementById("exc-live");
  const guide = document.getElementById("guide");
  if (!live || !guide || guide.hidden || live.dataset.state === guide.dataset.state) return;
  guide.hidden = true;
  const note = document.createElement("p");
  note.className = "notice";
  note.setAttribute("role", "status");
  note.textContent = "This exception was just " + live.dataset.state.toLowerCase() + " elsewhere: the page shows what was done.";
  guide.before(note);
});
