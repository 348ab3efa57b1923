import {
  collapseCarriageReturns,
  createLineSplitter,
  MAX_LINE_BYTES,
  plainText,
  readLine,
  splitLog,
} from "./log-lines.js";
import { sectionsOf } from "./log-sections.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const ts = (ms: number) => `\x1b_bk;t=${ms}\x07`;

describe("log lines", () => {
  it("splits at newlines keeping each line's byte offset, multi-byte characters included", () => {
    const lines = splitLog(bytes("é1\nzwei\n\ndrei"));
    expect(lines.map((l) => [l.offset, l.text])).toEqual([
      [0, "é1"],
      [4, "zwei"],
      [9, ""],
      [10, "drei"],
    ]);
    // A piece that starts mid-line (a tail) drops its first, partial line; offsets are the whole log's.
    expect(splitLog(bytes("ei\nvier\n"), 1000, true).map((l) => [l.offset, l.text])).toEqual([[1003, "vier"]]);
    expect(splitLog(bytes(""))).toEqual([]);
  });

  it("splits a log arriving in pieces exactly as the whole, pieces ending mid-line and mid-character", () => {
    const log = bytes("prep é\n--- \x1b[32mgrün\x1b[0m\nzwei\r\n\ndrei ✓ end");
    const whole = splitLog(log, 100);
    for (const size of [1, 2, 3, 7]) {
      const splitter = createLineSplitter(100);
      const lines = [];
      for (let at = 0; at < log.length; at += size) lines.push(...splitter.push(log.subarray(at, at + size)));
      lines.push(...splitter.end());
      expect(lines).toEqual(whole);
    }
    expect(whole.map((l) => l.offset)).toEqual([100, 108, 127, 133, 134]);
  });

  it("cuts a line longer than the limit at a character's boundary, holding no more than the limit", () => {
    const long = bytes(`${"a".repeat(MAX_LINE_BYTES - 1)}é${"b".repeat(10)}\nnext\n`);
    const splitter = createLineSplitter();
    const lines = [
      ...splitter.push(long.subarray(0, MAX_LINE_BYTES + 5)),
      ...splitter.push(long.subarray(MAX_LINE_BYTES + 5)),
    ];
    expect(splitter.end()).toEqual([]);
    // The two-byte é would straddle the limit: the first piece stops before it.
    expect(lines.map((l) => [l.offset, l.text.length])).toEqual([
      [0, MAX_LINE_BYTES - 1],
      [MAX_LINE_BYTES - 1, 11],
      [MAX_LINE_BYTES + 12, 4],
    ]);
    expect(lines[1]?.text).toBe(`é${"b".repeat(10)}`);
  });

  it("takes the agent's timestamp marks out of the text and keeps the first as the line's time", () => {
    const line = readLine(`${ts(1764236400123)}hello ${ts(1764236401000)}world`, 0);
    expect([line.at, line.text]).toEqual([1764236400123, "hello world"]);
    expect(readLine("no time", 0).at).toBeNull();
    // Other APC sequences are removed too, never shown as text.
    expect(readLine("a\x1b_other;x=1\x07b", 0).text).toBe("ab");
  });

  it("collapses carriage returns to what a terminal shows last", () => {
    expect(collapseCarriageReturns("10%\r50%\r100% done")).toBe("100% done");
    expect(collapseCarriageReturns("windows line\r")).toBe("windows line");
    expect(readLine(`${ts(5)}Downloading 1%\r${ts(9)}Downloading 99%`, 0)).toMatchObject({
      at: 5,
      text: "Downloading 99%",
    });
  });

  it("reads group headers by their marker, with or without styles, and the expand-previous marker", () => {
    expect(readLine("--- :rspec: Tests", 0).header).toEqual({ kind: "collapsed", title: ":rspec: Tests" });
    expect(readLine("+++ Failures", 0).header).toEqual({ kind: "expanded", title: "Failures" });
    expect(readLine("~~~ noise", 0).header).toEqual({ kind: "deemphasized", title: "noise" });
    expect(readLine("\x1b[32m--- green\x1b[0m", 0).header?.kind).toBe("collapsed");
    expect(plainText(readLine("\x1b[32m--- green\x1b[0m", 0).header?.title ?? "")).toBe("green");
    expect(readLine("^^^ +++", 0).expandsPrevious).toBe(true);
    for (const plain of ["---", "----- x", " --- x", "-- x", "+++x"]) expect(readLine(plain, 0).header).toBeUndefined();
  });
});

describe("log sections", () => {
  const open = (log: string) =>
    sectionsOf(splitLog(bytes(log))).map((s) => [s.header ? plainText(s.header.text) : null, s.open]);

  it("opens +++ groups, keeps --- and ~~~ closed, and keeps lines before the first header in an open section", () => {
    expect(open("prep\n--- a\n1\n+++ b\n2\n~~~ c\n3\n--- d\n4\n")).toEqual([
      [null, true],
      ["--- a", false],
      ["+++ b", true],
      ["~~~ c", false],
      ["--- d", false],
    ]);
  });

  it("opens the last --- group when no group is expanded", () => {
    expect(open("--- a\n1\n--- b\n2\n~~~ c\n3\n")).toEqual([
      ["--- a", false],
      ["--- b", true],
      ["~~~ c", false],
    ]);
  });

  it("opens the group a ^^^ +++ line ends, and then no other", () => {
    const sections = sectionsOf(splitLog(bytes("--- a\n1\n^^^ +++\n--- b\n2\n")));
    expect(sections.map((s) => s.open)).toEqual([true, false]);
    // The marker is not shown as a line.
    expect(sections[0]?.lines.map((l) => l.text)).toEqual(["1"]);
  });
});
