/**
 * The build page's script, served as /assets/<hash>/build-page.js (assets.ts) on build pages only. It opens jobs in
 * place: opening a job's row loads its panel (its log's tail, its environment) from the row's `data-panel` URL
 * (`…/log?fragment=1`), and an address naming a job (`#<job id>`, as REST's web_url does) or one of its log lines
 * opens that job. Without it the page still works: each row links to `?job=<id>`, which the server renders open.
 * Plain ES2020 without template literals: the source is itself inside one.
 */
// biome-ignore lint/complexity/noUselessStringRaw: escapes in the asset must reach the browser as written, should one be added.
export const BUILD_PAGE_JS = String.raw`"use strict";
(function () {
  function slotOf(details) {
    var body = details.querySelector(":scope > .job-body");
    return body && body.querySelector(":scope > .job-panel-slot");
  }

  // Loads a job's panel into its row once; a failure leaves the link to the server-rendered page in place.
  function load(details) {
    var url = details.getAttribute("data-panel");
    var slot = slotOf(details);
    if (!url || !slot || slot.hasAttribute("data-loaded") || slot.hasAttribute("data-loading")) return;
    slot.setAttribute("data-loading", "");
    slot.setAttribute("aria-busy", "true");
    fetch(url, { credentials: "same-origin", headers: { accept: "text/html" } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (text) {
        slot.removeAttribute("data-loading");
        slot.removeAttribute("aria-busy");
        if (text === null) return;
        var t = document.createElement("template");
        t.innerHTML = text;
        slot.replaceChildren(t.content);
        slot.setAttribute("data-loaded", "");
        if (window.conveyor && window.conveyor.localTimes) window.conveyor.localTimes(slot);
        var row = details.closest("li.job");
        slot.dispatchEvent(new CustomEvent("conveyor:panel", { bubbles: true, detail: { job: row ? row.id : "" } }));
        var target = location.hash.length > 1 && document.getElementById(decodeURIComponent(location.hash.slice(1)));
        if (target && slot.contains(target)) target.scrollIntoView();
      })
      .catch(function () {
        slot.removeAttribute("data-loading");
        slot.removeAttribute("aria-busy");
      });
  }

  // Opening a row loads its panel (a toggle event does not bubble: listen in the capture phase).
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (details && details.matches && details.matches("details.job-details[data-panel]") && details.open) load(details);
  }, true);

  // An address naming a job, an earlier attempt or a log line opens the row that holds it.
  function openTarget() {
    if (location.hash.length < 2) return;
    var id = decodeURIComponent(location.hash.slice(1));
    var target = document.getElementById(id);
    var row = target ? target.closest("li.job") : null;
    if (!row) return;
    var details = row.querySelector(":scope > details.job-details");
    if (details && !details.open) details.open = true;
    else if (details) load(details);
    for (var p = target.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    target.scrollIntoView();
  }

  function start() {
    openTarget();
    window.addEventListener("hashchange", openTarget);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
`;
