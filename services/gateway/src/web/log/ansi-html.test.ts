import { AnsiUp } from "ansi_up";
import { createAnsiToHtml } from "./ansi-html.js";

/** ansi_up as the converter configures it, without the fast path for plain text. */
function plainAnsiUp() {
  const up = new AnsiUp();
  up.use_classes = true;
  up.escape_html = true;
  up.url_allowlist = { http: 1, https: 1 };
  return (text: string) => up.ansi_to_html(text);
}

describe("the ANSI converter", () => {
  it("writes every line as ansi_up does, styles carried from line to line, plain lines taking the fast path", () => {
    const lines = [
      "plain & <b>\"quoted\"</b> 'single'",
      "\x1b[31mred starts",
      "still red, no escape here",
      "\x1b[0m reset",
      "plain again",
      "\x1b[1;4mbold underlined\x1b[22m only underline",
      "underline carries",
      "\x1b[24m",
      "",
      "\x1b[38;5;208morange\x1b[0m",
      "after",
      "cut short \x1b[3",
      "1m continues the sequence",
      "\x1b[m",
      "end",
    ];
    const fast = createAnsiToHtml();
    const reference = plainAnsiUp();
    for (const line of lines) expect(fast.toHtml(line)).toBe(reference(line));
  });

  it("skips ansi_up only for text without escapes while no style is on", () => {
    const fast = createAnsiToHtml();
    const spy = jest.spyOn(AnsiUp.prototype, "ansi_to_html");
    try {
      fast.toHtml("plain <text>");
      expect(spy).not.toHaveBeenCalled();
      fast.toHtml("\x1b[32mgreen on");
      fast.toHtml("no escape, but green is on");
      expect(spy).toHaveBeenCalledTimes(2);
      fast.toHtml("\x1b[0m");
      fast.toHtml("plain again");
      expect(spy).toHaveBeenCalledTimes(3);
    } finally {
      spy.mockRestore();
    }
  });
});
