import { UsageError } from "./args.js";

/** Where a password is read from and prompts are written to: the process's stdin and stderr. */
export interface PasswordIo {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

const CTRL_C = "\u0003";
const CTRL_D = "\u0004";
const BACKSPACE = ["\u0008", "\u007f"];

/**
 * Reads a new password from stdin, never from the command line (where `ps` would show it): on a terminal it is asked
 * twice without echo; otherwise the first line of what is piped in is taken (`printf '%s\n' "$PW" | ci-admin …`).
 */
export async function readPassword(io: PasswordIo = { input: process.stdin, output: process.stderr }): Promise<string> {
  if (!io.input.isTTY) {
    const password = firstLine(await readAll(io.input));
    if (password === "") throw new UsageError("no password on stdin: pipe it in, or run the command in a terminal");
    return password;
  }
  const password = await promptHidden(io, "New password: ");
  const again = await promptHidden(io, "Again: ");
  if (password !== again) throw new UsageError("the two passwords differ");
  return password;
}

async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString("utf8");
}

function firstLine(text: string): string {
  return (text.split("\n", 1)[0] ?? "").replace(/\r$/, "");
}

/** One line typed on a terminal in raw mode, not echoed; Ctrl-C stops the command. */
function promptHidden(io: PasswordIo, prompt: string): Promise<string> {
  const { input, output } = io;
  output.write(prompt);
  input.setRawMode(true);
  input.resume();
  input.setEncoding("utf8");
  let typed = "";
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      output.write("\n");
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (data: string) => {
      for (const char of data) {
        if (char === "\r" || char === "\n" || char === CTRL_D) return done();
        if (char === CTRL_C) return done(new UsageError("cancelled"));
        if (BACKSPACE.includes(char)) typed = [...typed].slice(0, -1).join("");
        else typed += char;
      }
    };
    input.on("data", onData);
  });
}
