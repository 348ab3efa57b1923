import { Readable } from "node:stream";
import { UsageError } from "./args.js";
import { type PasswordIo, readPassword } from "./read-password.js";

/** stdin as a pipe carrying `text`, and a stderr that records what is written. */
function piped(text: string) {
  const written: string[] = [];
  const input = Readable.from([Buffer.from(text)]) as unknown as NodeJS.ReadStream;
  const output = { write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
  return { io: { input, output } satisfies PasswordIo, written };
}

describe("readPassword", () => {
  it("takes the first line of what is piped in, without its line ending, and prompts for nothing", async () => {
    const { io, written } = piped("correct horse battery\r\nsecond line\n");
    expect(await readPassword(io)).toBe("correct horse battery");
    expect(written).toEqual([]);
  });

  it("keeps spaces, which may be part of a password", async () => {
    expect(await readPassword(piped("  spaced out  ").io)).toBe("  spaced out  ");
  });

  it("refuses an empty stdin", async () => {
    await expect(readPassword(piped("").io)).rejects.toThrow(UsageError);
    await expect(readPassword(piped("\n").io)).rejects.toThrow(/no password on stdin/);
  });
});
