import { MAX_LINE_BYTES, splitLog } from "../log/log-lines.js";
import { createLineCutter, renderLines } from "./live-lines.js";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("live log lines", () => {
  it("sends complete lines and the line still being written, and resumes at the end of the complete ones", () => {
    const cut = createLineCutter(100);
    const first = cut.push(100, bytes("one\ntw"));
    expect(first).toMatchObject({ from: 100, resumeAt: 104 });
    expect(first?.html).toContain('id="L100"');
    expect(first?.html).toContain('<span class="t">tw</span>');
    // The unfinished line comes again, whole, with what follows it.
    const second = cut.push(106, bytes("o\nthree"));
    expect(second).toMatchObject({ from: 104, resumeAt: 108 });
    expect(second?.html).toContain('id="L104"');
    expect(second?.html).toContain('<span class="t">two</span>');
    expect(second?.html).not.toContain('id="L100"');
    expect(cut.push(113, bytes(""))).toBeNull();
    // The log ended: its last line is complete.
    expect(cut.finish()).toMatchObject({ from: 108, resumeAt: 113 });
    expect(cut.finish()).toBeNull();
    expect(cut.resumeAt).toBe(113);
  });

  it("renders lines as the page does: escaped, coloured, group headers as sections", () => {
    const html = renderLines(0, bytes("<b>\n--- \x1b[32mTests\x1b[0m\nok\n"));
    expect(html).toContain("&lt;b&gt;");
    expect(html).toMatch(/<details class="g collapsed" open><summary><span class="l h" id="L4">/);
    expect(html).toContain('<span class="ansi-green-fg">Tests</span>');
  });

  it("cuts a line that never ends where the page's renderer cuts it, so that what it holds stays bounded", () => {
    const cut = createLineCutter(0);
    // A two-byte character straddles the limit: the cut comes before it, as log-lines.ts cuts.
    const long = `${"x".repeat(MAX_LINE_BYTES - 1)}é${"y".repeat(10)}`;
    const update = cut.push(0, bytes(long));
    expect(update).toMatchObject({ from: 0, resumeAt: MAX_LINE_BYTES - 1 });
    expect(update?.html).toContain(`id="L${MAX_LINE_BYTES - 1}"`);
    expect(splitLog(bytes(long)).map((l) => l.offset)).toEqual([0, MAX_LINE_BYTES - 1]);
    expect(cut.push(Buffer.byteLength(long), bytes("\n"))).toMatchObject({
      from: MAX_LINE_BYTES - 1,
      resumeAt: Buffer.byteLength(long) + 1,
    });
  });

  it("refuses bytes that do not continue the log", () => {
    const cut = createLineCutter(0);
    cut.push(0, bytes("ab"));
    expect(() => cut.push(5, bytes("c"))).toThrow("log bytes at 5 do not continue the log at 2");
  });
});
