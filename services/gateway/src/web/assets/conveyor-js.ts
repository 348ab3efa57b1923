/**
 * The pages' script, served as /assets/<hash>/conveyor.js (assets.ts); in a module for the reason conveyor-css.ts
 * gives. It only enhances what the server's HTML already shows: times in the reader's own time zone, the pipeline
 * filter applied while typing (the form still works without it), and a confirmation before destructive actions.
 * It must stay plain ES2020 with no template literals, because it is itself inside one.
 */
// biome-ignore lint/complexity/noUselessStringRaw: escapes in the asset (a backslash sequence such as \n in a script's string) must reach the browser as written.
export const CONVEYOR_JS = String.raw`"use strict";
(function () {
  // Times: the server writes UTC; show them in the reader's zone, keeping UTC in the title.
  function localTimes(root) {
    var times = root.querySelectorAll("time[datetime][data-local]");
    for (var i = 0; i < times.length; i++) {
      var t = times[i];
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      t.title = t.getAttribute("datetime");
      t.textContent = d.toLocaleString(undefined, {
        year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit"
      });
    }
  }

  // Filter as you type: an input with data-filter="<list id>" hides the list's items whose data-name lacks its text.
  function filters(root) {
    var inputs = root.querySelectorAll("input[data-filter]");
    for (var i = 0; i < inputs.length; i++) {
      (function (input) {
        var list = document.getElementById(input.getAttribute("data-filter"));
        if (!list) return;
        var apply = function () {
          var q = input.value.trim().toLowerCase();
          var items = list.querySelectorAll("[data-name]");
          var shown = 0;
          for (var j = 0; j < items.length; j++) {
            var match = q === "" || items[j].getAttribute("data-name").toLowerCase().indexOf(q) !== -1;
            items[j].hidden = !match;
            if (match) shown++;
          }
          var status = document.getElementById(input.getAttribute("data-filter") + "-count");
          if (status) status.textContent = shown + (shown === 1 ? " pipeline" : " pipelines");
        };
        input.addEventListener("input", apply);
      })(inputs[i]);
    }
  }

  // Destructive actions ask first: a form with data-confirm="<question>" submits only when confirmed.
  function confirmations(root) {
    root.addEventListener("submit", function (event) {
      var form = event.target;
      var question = form && form.getAttribute && form.getAttribute("data-confirm");
      if (question && !window.confirm(question)) event.preventDefault();
    });
  }

  function start() {
    localTimes(document);
    filters(document);
    confirmations(document);
  }
  window.conveyor = { localTimes: localTimes };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
`;
