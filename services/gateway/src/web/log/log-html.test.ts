import { createAnsiToHtml } from "./ansi-html.js";
import { renderLogHtml, renderLogLine, renderLogStream } from "./log-html.js";
import { splitLog } from "./log-lines.js";
import { planOf } from "./log-sections.js";

const render = (log: string, firstLineNumber?: number) =>
  renderLogHtml(splitLog(new TextEncoder().encode(log)), {
    ansi: createAnsiToHtml(),
    ...(firstLineNumber === undefined ? {} : { firstLineNumber }),
  }).value;

describe("log HTML", () => {
  it("gives every line its anchor by byte offset, its number and its time", () => {
    const out = render("\x1b_bk;t=1764236400000\x07hello\nworld\n", 1);
    expect(out).toBe(
      '<div class="s"><span class="l" id="L0"><a class="n" href="#L0">1</a><time datetime="2025-11-27T09:40:00.000Z">09:40:00</time><span class="t">hello</span></span>' +
        '<span class="l" id="L27"><a class="n" href="#L27">2</a><span class="t">world</span></span></div>',
    );
  });

  it("escapes the log's HTML, and shows OSC 8 links only for http(s) URLs", () => {
    const out = render(
      '<script>alert(1)</script> & "q"\n\x1b]8;;https://example.com/a?b=1&c=2\x07docs\x1b]8;;\x07\n\x1b]8;;javascript:alert(1)\x07bad\x1b]8;;\x07\n',
    );
    expect(out).toContain("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;");
    expect(out).not.toContain("<script>");
    expect(out).toContain('<a href="https://example.com/a?b=1&amp;c=2"');
    expect(out).not.toContain("javascript:");
    expect(out).toContain(">bad<");
  });

  it("renders 16, 256 and 24-bit colours and bold, and carries a style from one line to the next", () => {
    const out = render(
      "\x1b[31;1mred\nstill red\x1b[0m plain\n\x1b[38;5;208morange\x1b[0m \x1b[38;2;1;2;3mrgb\x1b[0m\n",
    );
    expect(out).toContain('<span style="font-weight:bold" class="ansi-red-fg">red</span>');
    expect(out).toContain('<span style="font-weight:bold" class="ansi-red-fg">still red</span> plain');
    expect(out).toContain('style="color:rgb(255,135,0)"');
    expect(out).toContain('style="color:rgb(1,2,3)"');
  });

  it("renders groups as <details>, open by Buildkite's rules, the header's title as its summary", () => {
    const out = render("--- \x1b[32mone\x1b[0m\na\n+++ two\nb\n");
    expect(out).toMatch(/^<details class="g collapsed"><summary><span class="l h" id="L0">/);
    // A header's number is text: its summary already toggles the group, a link inside it would be a second control.
    expect(render("--- a\nb\n", 1)).toContain('<summary><span class="l h" id="L0"><span class="n">1</span>');
    expect(render("--- a\nb\n")).toContain('<summary><span class="l h" id="L0"><span class="n"></span>');
    expect(render("--- a\nb\n")).not.toMatch(/<summary>[\s\S]*<a [\s\S]*<\/summary>/);
    expect(out).toContain('<span class="t"><span class="ansi-green-fg">one</span></span>');
    expect(out).toContain('<details class="g expanded" open><summary>');
  });

  it("renders a log streamed in batches exactly as the same lines held at once", async () => {
    const log = "prep\n--- a\n\x1b[31m1\n^^^ +++\n+++ b\n2\x1b[0m\n~~~ c\n3\n--- d\n4\n";
    const lines = splitLog(new TextEncoder().encode(log));
    async function* batches() {
      for (let i = 0; i < lines.length; i += 3) yield lines.slice(i, i + 3);
    }
    let streamed = "";
    for await (const piece of renderLogStream(batches(), planOf(lines), {
      ansi: createAnsiToHtml(),
      firstLineNumber: 1,
    }))
      streamed += piece;
    expect(streamed).toBe(render(log, 1));
    expect(streamed).toContain('<a class="n" href="#L52">10</a>');
  });

  it("renders one line on its own, with its number when given, escaping its text", () => {
    const [line] = splitLog(new TextEncoder().encode("<b>x</b>\n"), 42);
    if (!line) throw new Error("no line");
    expect(renderLogLine(line, createAnsiToHtml()).value).toBe(
      '<span class="l" id="L42"><a class="n" href="#L42" aria-label="Link to this line"></a><span class="t">&lt;b&gt;x&lt;/b&gt;</span></span>',
    );
    expect(renderLogLine(line, createAnsiToHtml(), 7).value).toContain('<a class="n" href="#L42">7</a>');
  });
});
