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
