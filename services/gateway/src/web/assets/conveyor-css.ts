/**
 * The pages' stylesheet, served as /assets/<hash>/conveyor.css (assets.ts). It lives in a module rather than a .css
 * file because the gateway ships its compiled dist/ only (deploy/Dockerfile): a module is compiled in with the code
 * that links to it, so a page can never name a stylesheet its gateway does not have.
 */
// biome-ignore lint/complexity/noUselessStringRaw: escapes in the asset (a backslash sequence such as \n in a script's string) must reach the browser as written.
export const CONVEYOR_CSS = String.raw`
:root {
  --fg: #1f2328;
  --muted: #57606a;
  --border: #d0d7de;
  --bg: #ffffff;
  --bg-soft: #f6f8fa;
  --accent: #0b5cad;
  --focus: #0b5cad;
  --passed: #1a7f37;
  --passed-bg: #dafbe1;
  --failed: #c4162a;
  --failed-bg: #ffebe9;
  --running: #8a5a00;
  --running-bg: #fff3c4;
  --running-bar: #d99a00;
  --blocked: #6639ba;
  --blocked-bg: #f1eaff;
  --waiting: #0b5cad;
  --waiting-bg: #ddf4ff;
  --neutral: #57606a;
  --neutral-bg: #eaeef2;
  --mono: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
  --sans: -apple-system, BlinkMacSystemFont, "Segoe UI", Helvetica, Arial, sans-serif;
}
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--fg); background: var(--bg); font-family: var(--sans); line-height: 1.45; }
a { color: var(--accent); }
a:hover { text-decoration: underline; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip-link { position: absolute; left: -10000px; top: 0; }
.skip-link:focus { left: 0.5rem; top: 0.5rem; z-index: 10; background: var(--bg); padding: 0.5rem 1rem; }
.visually-hidden {
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap;
}
code, pre, .mono { font-family: var(--mono); font-size: 0.92em; }

/* The shell: header with the organization switcher and the person, navigation, main, footer. */
.site-header {
  display: flex; align-items: center; gap: 1.25rem; padding: 0.5rem 1.5rem;
  background: #14171a; color: #fff; flex-wrap: wrap;
}
.site-header a { color: #fff; text-decoration: none; }
.site-header a:hover { text-decoration: underline; }
.brand { font-weight: 700; font-size: 1.1rem; letter-spacing: 0.02em; }
.org-switcher { position: relative; }
.org-switcher summary { cursor: pointer; list-style: none; padding: 0.25rem 0.5rem; border-radius: 4px; }
.org-switcher summary::-webkit-details-marker { display: none; }
.org-switcher summary::after { content: " ▾"; }
.org-switcher[open] summary { background: #2d333b; }
.org-switcher ul {
  position: absolute; z-index: 5; margin: 0.25rem 0 0; padding: 0.25rem 0; list-style: none; min-width: 14rem;
  background: var(--bg); border: 1px solid var(--border); border-radius: 6px; box-shadow: 0 8px 24px rgba(0,0,0,.15);
}
.org-switcher li a { display: block; padding: 0.4rem 0.8rem; color: var(--fg); }
.org-switcher li a[aria-current="true"] { font-weight: 700; }
.site-nav ul { display: flex; gap: 1rem; margin: 0; padding: 0; list-style: none; }
.site-nav a[aria-current="page"] { text-decoration: underline; text-underline-offset: 4px; }
.person { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; }
.person form { margin: 0; }
.person button { background: transparent; color: #fff; border: 1px solid #57606a; }
main { max-width: 1200px; margin: 0 auto; padding: 1.5rem; }
.site-footer { max-width: 1200px; margin: 2rem auto; padding: 1rem 1.5rem; color: var(--muted); font-size: 0.85rem;
  border-top: 1px solid var(--border); }
.site-footer a { color: var(--muted); }

/* Headings, breadcrumbs, panels, tables. */
h1 { font-size: 1.6rem; margin: 0 0 0.75rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 0.5rem; }
.breadcrumbs { margin: 0 0 0.5rem; padding: 0; list-style: none; display: flex; gap: 0.4rem; color: var(--muted); }
.breadcrumbs li + li::before { content: "/"; margin-right: 0.4rem; }
.page-head { display: flex; align-items: flex-start; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.panel { border: 1px solid var(--border); border-radius: 6px; background: var(--bg); margin: 1rem 0; }
.panel > h2, .panel > .panel-head { margin: 0; padding: 0.75rem 1rem; border-bottom: 1px solid var(--border);
  background: var(--bg-soft); font-size: 1rem; border-radius: 6px 6px 0 0; }
.panel-body { padding: 1rem; }
.muted { color: var(--muted); }
.empty { padding: 2rem 1rem; text-align: center; color: var(--muted); }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 0.55rem 0.75rem; border-bottom: 1px solid var(--border); vertical-align: top; }
th { font-size: 0.85rem; color: var(--muted); font-weight: 600; background: var(--bg-soft); }
tr:last-child td { border-bottom: none; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.35rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.tag { display: inline-block; font-family: var(--mono); font-size: 0.8rem; padding: 0.05rem 0.4rem; margin: 0.1rem;
  border: 1px solid var(--border); border-radius: 4px; background: var(--bg-soft); }

/* States: passed green, failed red, running amber, blocked purple, waiting blue, the rest grey. */
.state { display: inline-block; padding: 0.1rem 0.5rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600;
  border: 1px solid currentColor; white-space: nowrap; }
.state-passed { color: var(--passed); background: var(--passed-bg); }
.state-failed, .state-failing, .state-timed_out, .state-broken, .state-expired { color: var(--failed);
  background: var(--failed-bg); }
.state-running, .state-canceling, .state-assigned, .state-accepted { color: var(--running);
  background: var(--running-bg); }
.state-blocked, .state-blocked_failed { color: var(--blocked); background: var(--blocked-bg); }
.state-scheduled, .state-waiting, .state-pending, .state-limited, .state-limiting { color: var(--waiting);
  background: var(--waiting-bg); }
.state-canceled, .state-skipped, .state-not_run, .state-none, .state-unblocked, .state-waiting_failed,
.state-lost, .state-stopped, .state-disconnected, .state-paused { color: var(--neutral); background: var(--neutral-bg); }
.state-connected { color: var(--passed); background: var(--passed-bg); }

/* The organization page: one row per pipeline with its recent builds as small bars. */
.filter-form { display: flex; gap: 0.5rem; align-items: end; margin: 0 0 1rem; flex-wrap: wrap; }
.pipelines { list-style: none; margin: 0; padding: 0; border: 1px solid var(--border); border-radius: 6px; }
.pipeline-row { display: grid; grid-template-columns: minmax(12rem, 2fr) minmax(10rem, 1fr) minmax(12rem, 2fr);
  gap: 1rem; align-items: center; padding: 0.75rem 1rem; border-bottom: 1px solid var(--border); }
.pipeline-row:last-child { border-bottom: none; }
.pipeline-row[hidden] { display: none; }
.pipeline-name { font-weight: 600; font-size: 1.05rem; }
.pipeline-description { color: var(--muted); font-size: 0.85rem; margin: 0.1rem 0 0; }
.bars { display: flex; align-items: flex-end; gap: 2px; height: 28px; margin: 0; padding: 0; list-style: none; }
.bars li { display: block; }
.bar { display: block; width: 8px; height: 28px; border-radius: 2px; background: var(--neutral-bg); }
.bar.state-passed { background: var(--passed); }
.bar.state-failed, .bar.state-failing { background: var(--failed); }
.bar.state-running, .bar.state-canceling { background: var(--running-bar); }
.bar.state-blocked { background: var(--blocked); }
.bar.state-scheduled { background: var(--waiting); }
.bar.state-canceled, .bar.state-skipped, .bar.state-not_run { background: #afb8c1; height: 14px; }
.bar { border: none; padding: 0; }

/* Build lists. */
.builds { list-style: none; margin: 0; padding: 0; border: 1px solid var(--border); border-radius: 6px; }
.build-row { display: grid; grid-template-columns: 7rem 1fr auto; gap: 1rem; align-items: start;
  padding: 0.75rem 1rem; border-bottom: 1px solid var(--border); }
.build-row:last-child { border-bottom: none; }
.build-number { font-weight: 700; }
.build-message { font-weight: 600; overflow-wrap: anywhere; margin: 0; }
.build-meta { color: var(--muted); font-size: 0.85rem; margin: 0.2rem 0 0; display: flex; gap: 0.75rem;
  flex-wrap: wrap; }
.pager { display: flex; gap: 1rem; justify-content: center; margin: 1rem 0; }

/* Forms and buttons. */
form.stacked { display: grid; gap: 0.75rem; max-width: 40rem; }
label { font-weight: 600; font-size: 0.9rem; }
.field { display: grid; gap: 0.25rem; }
.field small { color: var(--muted); font-weight: normal; }
input[type="text"], input[type="search"], input[type="password"], input[type="email"], select, textarea {
  font: inherit; padding: 0.4rem 0.55rem; border: 1px solid #8c959f; border-radius: 6px; background: var(--bg);
  color: var(--fg); min-width: 0; }
textarea { font-family: var(--mono); min-height: 5rem; }
.checkbox { display: flex; gap: 0.4rem; align-items: center; font-weight: normal; }
button, .button { font: inherit; font-weight: 600; padding: 0.4rem 0.9rem; border-radius: 6px; cursor: pointer;
  border: 1px solid #8c959f; background: var(--bg-soft); color: var(--fg); text-decoration: none;
  display: inline-block; }
button.primary, .button.primary { background: #1a7f37; border-color: #1a7f37; color: #fff; }
button.danger { background: var(--bg); border-color: var(--failed); color: var(--failed); }
.actions { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; }
.actions form { margin: 0; }
.form-errors { border: 1px solid var(--failed); background: var(--failed-bg); color: var(--failed);
  border-radius: 6px; padding: 0.75rem 1rem; }
.form-errors ul { margin: 0.25rem 0 0; }
.notice { border: 1px solid var(--border); background: var(--bg-soft); border-radius: 6px; padding: 0.75rem 1rem; }

/* Error pages. */
.error-page { text-align: center; padding: 4rem 1rem; }
.error-page .status { font-size: 4rem; font-weight: 700; color: var(--muted); margin: 0; }

/* Logs: a monospace area on a dark background. */
.log { background: #161b22; color: #e6edf3; font-family: var(--mono); font-size: 0.85rem; line-height: 1.5;
  border-radius: 6px; padding: 0.5rem 0; overflow-x: auto; }
/* A log's lines (web/log/log-html.ts): each a block with its anchor (number), time and text; groups as details. */
.log .l { display: block; padding: 0 1rem 0 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.log .l:target { background: #3d3a1e; }
.log .n { display: inline-block; min-width: 4rem; padding-right: 0.75rem; text-align: right; color: #8b949e;
  text-decoration: none; user-select: none; }
.log .n:empty { min-width: 1.5rem; }
.log .n:hover, .log .n:focus { color: #e6edf3; text-decoration: underline; }
.log time { color: #8b949e; margin-right: 0.75rem; user-select: none; }
.log details > summary { cursor: pointer; list-style: none; }
.log details > summary::-webkit-details-marker { display: none; }
.log details > summary .t::before { content: "▸ "; color: #8b949e; }
.log details[open] > summary .t::before { content: "▾ "; }
.log .h .t { font-weight: 700; }
/* De-emphasized groups (~~~) as Buildkite shows them: a title in normal weight, colours as readable as the rest. */
.log .g.deemphasized > summary .t { font-weight: 400; }
/* ANSI colours (ansi_up's classes), each readable on the log's background. */
.ansi-black-fg, .ansi-bright-black-fg { color: #8b949e; }
.ansi-red-fg { color: #ff7b72; } .ansi-bright-red-fg { color: #ffa198; }
.ansi-green-fg { color: #7ee787; } .ansi-bright-green-fg { color: #aff5b4; }
.ansi-yellow-fg { color: #e3b341; } .ansi-bright-yellow-fg { color: #f8e3a1; }
.ansi-blue-fg { color: #79c0ff; } .ansi-bright-blue-fg { color: #a5d6ff; }
.ansi-magenta-fg { color: #d2a8ff; } .ansi-bright-magenta-fg { color: #e2c5ff; }
.ansi-cyan-fg { color: #56d4dd; } .ansi-bright-cyan-fg { color: #b3f0ff; }
.ansi-white-fg, .ansi-bright-white-fg { color: #f0f6fc; }
.ansi-black-bg, .ansi-bright-black-bg { background: #484f58; }
.ansi-red-bg, .ansi-bright-red-bg { background: #8e1519; }
.ansi-green-bg, .ansi-bright-green-bg { background: #1a5d2b; }
.ansi-yellow-bg, .ansi-bright-yellow-bg { background: #6e5200; }
.ansi-blue-bg, .ansi-bright-blue-bg { background: #0d419d; }
.ansi-magenta-bg, .ansi-bright-magenta-bg { background: #6e40c9; }
.ansi-cyan-bg, .ansi-bright-cyan-bg { background: #0e5a60; }
.ansi-white-bg, .ansi-bright-white-bg { background: #6e7681; }
.log a:not(.n) { color: #79c0ff; }
.log-bar { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; margin: 0.5rem 0; }

/* The build page (web/pages/build-*.ts). */
.build-head h1 .build-number { color: var(--muted); }
.build-state { margin: 0 0 0.5rem; }
.build-message-more { white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--sans); margin: 0 0 1rem; }
.build-facts { margin: 0.75rem 0 1rem; }
.inline-list { list-style: none; margin: 0; padding: 0; display: flex; gap: 0.75rem; flex-wrap: wrap; }
.jobs { list-style: none; margin: 0; padding: 0; border: 1px solid var(--border); border-radius: 6px; }
.job { border-bottom: 1px solid var(--border); }
.job:last-child { border-bottom: none; }
.job:target, .attempt:target { outline: 2px solid var(--focus); outline-offset: -2px; }
.job-details > summary, .job-line { display: flex; gap: 0.6rem; align-items: center; flex-wrap: wrap;
  padding: 0.55rem 0.9rem; }
.job-details > summary { cursor: pointer; }
.job-name { font-weight: 600; overflow-wrap: anywhere; }
.job-meta { color: var(--muted); font-size: 0.85rem; display: inline-flex; gap: 0.6rem; flex-wrap: wrap;
  align-items: center; margin-left: auto; }
.job-body { padding: 0 0.9rem 0.9rem; display: grid; gap: 0.75rem; }
.job-line.waiter { justify-content: center; color: var(--muted); background: var(--bg-soft); font-size: 0.85rem; }
.job-line.waiter .job-name { font-weight: 400; }
pre.command, pre.value { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.attempts ol { margin: 0.25rem 0 0; padding-left: 1.25rem; display: grid; gap: 0.25rem; }
.attempt { display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
.prompt { font-weight: 600; margin: 0; }
.unblock-form fieldset.field { border: 1px solid var(--border); border-radius: 6px; margin: 0; }
.problem { color: var(--failed); }
.annotation { border: 1px solid var(--border); border-left-width: 4px; border-radius: 6px; padding: 0.5rem 1rem;
  margin: 0.5rem 0; }
.annotation-error { border-left-color: var(--failed); }
.annotation-warning { border-left-color: var(--running-bar); }
.annotation-info { border-left-color: var(--waiting); }
.annotation-success { border-left-color: var(--passed); }
.annotation-context { font-family: var(--mono); font-size: 0.8rem; color: var(--muted); margin: 0; }
.annotation-body { overflow-wrap: anywhere; }

@media (max-width: 720px) {
  .pipeline-row { grid-template-columns: 1fr; }
  .build-row { grid-template-columns: 1fr; }
  main { padding: 1rem; }
}
`;
