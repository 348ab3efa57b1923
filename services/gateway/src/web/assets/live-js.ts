import { FINISHED_BUILD_STATES } from "@conveyor/ci-rules";

/**
 * The build page's live updates (docs/pages.md#live-updates), served as /assets/<hash>/live.js on build pages only.
 * It opens the page's live stream (web/live/live-route.ts) while the build runs and the tab is visible, naming the
 * logs the page shows and where it has each; applies the rows, the build's state and the new log lines the stream
 * sends; follows the log only when the reader is at the bottom; and closes when the build finished (then reloads
 * the page's other parts in place) or the tab is hidden (resuming where it was when it shows again). Log times are
 * shown in the reader's time zone. Plain ES2020 without template literals: the source is itself inside one.
 */
export const LIVE_JS = String.raw`"use strict";
(function () {
  var FINISHED = ${JSON.stringify(FINISHED_BUILD_STATES)};
  var root = document.querySelector(".build[data-build]");
  if (!root || !window.EventSource) return;
  var liveUrl = location.pathname.replace(/\/+$/, "") + "/live";
  var source = null;
  var retryTimer = null;
  var retryMs = 2000;
  var followed = "";
  /** job id -> offset the page has its log up to (from the last log event's id). */
  var positions = {};
  var ended = FINISHED.indexOf(root.getAttribute("data-state")) >= 0;

  var timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  function localTimes(scope) {
    var times = scope.querySelectorAll(".log time[datetime]:not([data-localized])");
    for (var i = 0; i < times.length; i++) {
      var d = new Date(times[i].getAttribute("datetime"));
      if (isNaN(d.getTime())) continue;
      times[i].title = times[i].getAttribute("datetime");
      times[i].textContent = timeFormat.format(d);
      times[i].setAttribute("data-localized", "");
    }
  }

  function parse(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return t.content;
  }

  // The logs the page shows: every opened job panel, with or without a log yet.
  function logsShown() {
    var out = [];
    var panels = root.querySelectorAll("li.job .job-panel");
    for (var i = 0; i < panels.length; i++) {
      var row = panels[i].closest("li.job");
      if (row && row.id && out.indexOf(row.id) < 0) out.push(row.id);
    }
    return out.slice(0, 20);
  }

  function logOf(jobId, create) {
    var row = document.getElementById(jobId);
    if (!row) return null;
    var log = row.querySelector(".log[data-job]");
    if (log || !create) return log;
    var panel = row.querySelector(".job-panel");
    if (!panel) return null;
    var empty = panel.querySelector(".empty");
    log = document.createElement("div");
    log.className = "log";
    log.id = "log-" + jobId;
    log.setAttribute("data-job", jobId);
    log.setAttribute("data-end", "0");
    log.tabIndex = 0;
    log.setAttribute("aria-label", "Log");
    if (empty) empty.replaceWith(log);
    else panel.appendChild(log);
    return log;
  }

  // Where the page has a log up to: the last event's position, else the start of its last line (sent again and
  // replaced, since it may be unfinished), else where the server's rendering ended.
  function positionOf(jobId) {
    if (positions[jobId] !== undefined) return positions[jobId];
    var log = logOf(jobId, false);
    if (!log) return 0;
    var lines = log.querySelectorAll(".l[id^='L']");
    var last = lines[lines.length - 1];
    if (last) return Number(last.id.slice(1));
    return Number(log.getAttribute("data-end") || 0);
  }

  function atBottom(log) {
    if (log && log.scrollHeight > log.clientHeight + 1 && getComputedStyle(log).overflowY !== "visible")
      return log.scrollTop + log.clientHeight >= log.scrollHeight - 24;
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 24;
  }
  function toBottom(log) {
    if (log && log.scrollHeight > log.clientHeight + 1 && getComputedStyle(log).overflowY !== "visible")
      log.scrollTop = log.scrollHeight;
    else window.scrollTo(0, document.documentElement.scrollHeight);
  }

  // Line numbers continue the page's when it numbered them (a log's tail is shown without). Read once per log,
  // before anything is added to it.
  function counter(log) {
    if (log.__lastNumber !== undefined) return;
    var numbers = log.querySelectorAll("a.n");
    var last = numbers[numbers.length - 1];
    log.__lastNumber = numbers.length === 0 ? 0 : last.textContent !== "" ? Number(last.textContent) : null;
  }
  function number(log) {
    if (log.__lastNumber === null) return;
    var fresh = log.querySelectorAll("a.n:empty");
    for (var i = 0; i < fresh.length; i++) {
      log.__lastNumber++;
      fresh[i].textContent = String(log.__lastNumber);
      fresh[i].removeAttribute("aria-label");
    }
  }

  function applyLog(d) {
    var log = logOf(d.job, true);
    if (!log) return;
    counter(log);
    var follow = atBottom(log);
    // The line starting where the update starts is the one still being written: the update brings it again.
    var unfinished = log.querySelector("[id='L" + d.from + "']");
    if (unfinished) {
      var n = unfinished.querySelector("a.n");
      if (log.__lastNumber !== null && n && n.textContent !== "") log.__lastNumber = Number(n.textContent) - 1;
      var holder = unfinished.parentElement;
      if (holder && holder.tagName === "SUMMARY") holder.parentElement.remove();
      else unfinished.remove();
    }
    var lines = parse(d.html);
    var first = lines.firstElementChild;
    var last = log.lastElementChild;
    // Lines before any group header in the update continue the page's last section.
    if (first && first.tagName === "DIV" && first.classList.contains("s") && last) {
      while (first.firstChild) last.appendChild(first.firstChild);
      first.remove();
    }
    log.appendChild(lines);
    number(log);
    localTimes(log.parentElement || log);
    if (follow) toBottom(log);
  }

  // The row to show for a new rendering: the new one carrying what the reader opened (its details, its loaded
  // panel), or the old one while a form in it is being filled in and its step's state is unchanged.
  function merged(old, fresh) {
    if (old.getAttribute("data-state") === fresh.getAttribute("data-state") && old.querySelector("form input, form select, form textarea")) return old;
    var opened = old.querySelectorAll("details[open]");
    for (var i = 0; i < opened.length; i++) {
      var same = opened[i].className && fresh.querySelector("details[class='" + opened[i].className + "']");
      if (same) same.open = true;
    }
    var panel = old.querySelector(".job-panel-slot[data-loaded]");
    var slot = fresh.querySelector(".job-panel-slot");
    if (panel && slot) slot.replaceWith(panel);
    return fresh;
  }

  function applyRow(d) {
    var old = document.getElementById(d.id);
    var fresh = parse(d.html).firstElementChild;
    if (!old || !fresh) return;
    var shown = merged(old, fresh);
    old.replaceWith(shown);
    if (window.conveyor && window.conveyor.localTimes) window.conveyor.localTimes(shown);
  }

  function applyList(d) {
    var section = root.querySelector(".build-jobs");
    if (!section) return;
    var list = parse(d.html);
    var rows = list.querySelectorAll("li.job[id]");
    for (var i = 0; i < rows.length; i++) {
      var old = document.getElementById(rows[i].id);
      if (!old) continue;
      var keep = merged(old, rows[i]);
      if (keep !== rows[i]) rows[i].replaceWith(keep);
    }
    var current = section.querySelector("ol.jobs, .empty");
    if (current) current.replaceWith(list);
    else section.appendChild(list);
    if (window.conveyor && window.conveyor.localTimes) window.conveyor.localTimes(section);
    localTimes(section);
  }

  function applyBuild(d) {
    root.setAttribute("data-state", d.state);
    var badge = root.querySelector(".build-state");
    if (badge && d.html) badge.innerHTML = d.html;
  }

  // Once the build finished, its other parts (actions, facts, artifacts) are read again; the jobs and their open
  // logs stay as they are.
  function refreshPage() {
    fetch(location.href, { credentials: "same-origin", headers: { accept: "text/html" } })
      .then(function (res) { return res.ok ? res.text() : null; })
      .then(function (text) {
        if (!text) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector(".build[data-build]");
        var jobs = root.querySelector(".build-jobs");
        var freshJobs = fresh && fresh.querySelector(".build-jobs");
        if (!fresh || !jobs || !freshJobs) return;
        freshJobs.replaceWith(jobs);
        root.replaceWith(fresh);
        root = fresh;
        if (window.conveyor && window.conveyor.localTimes) window.conveyor.localTimes(root);
      })
      .catch(function (err) {
        // The page stays correct but for its actions, which a reload shows.
        console.warn("conveyor: the finished build's page could not be read again", err);
      });
  }

  function close() {
    if (source) source.close();
    source = null;
  }

  function connect() {
    clearTimeout(retryTimer);
    close();
    if (ended || document.visibilityState === "hidden") return;
    var jobs = logsShown();
    followed = jobs.join(",");
    var logs = jobs.map(function (j) { return j + ":" + positionOf(j); }).join(",");
    source = new EventSource(liveUrl + (logs ? "?logs=" + encodeURIComponent(logs) : ""));
    var on = function (name, apply) {
      source.addEventListener(name, function (e) {
        retryMs = 2000;
        var data = JSON.parse(e.data);
        if (e.lastEventId) {
          var pairs = e.lastEventId.split(",");
          for (var i = 0; i < pairs.length; i++) {
            var at = pairs[i].lastIndexOf(":");
            positions[pairs[i].slice(0, at)] = Number(pairs[i].slice(at + 1));
          }
        }
        apply(data);
      });
    };
    on("log", applyLog);
    on("job", applyRow);
    on("jobs", applyList);
    on("build", applyBuild);
    on("end", function (d) {
      ended = true;
      close();
      applyBuild(d);
      refreshPage();
    });
    // An accepted stream starts the backoff again.
    source.onopen = function () {
      retryMs = 2000;
    };
    source.onerror = function () {
      // A refused or failed stream (429, 503, a 5xx, signed out) is closed for good by the browser: try again later,
      // at a random point of the next half of the wait, so that the pages a restarted gateway dropped do not all
      // come back at the same moment (waits of 1-2 s, 2-4 s, 4-8 s, … up to 15-30 s).
      if (source && source.readyState === EventSource.CLOSED) {
        close();
        retryTimer = setTimeout(connect, retryMs / 2 + Math.random() * (retryMs / 2));
        retryMs = Math.min(retryMs * 2, 30000);
      }
    };
  }

  localTimes(root);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") close();
    else if (!source) connect();
  });
  // A job's panel loaded in place (build-page.js announces it) is one more log to follow: reconnect naming it.
  document.addEventListener("conveyor:panel", function () {
    if (!ended && logsShown().join(",") !== followed) connect();
  });
  connect();
})();
`;
