import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import { UsageError } from "./args.js";

/** Turns any failure into one line a person can act on, and the exit code. */
export function describeError(
  err: unknown,
  where: { identityUrl: string; agentsUrl: string; usage: string },
): { message: string; code: number } {
  if (err instanceof UsageError) return { message: `${err.message}\nusage: ci-admin ${where.usage}`, code: 2 };
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable || err.code === Code.DeadlineExceeded) {
      return {
        message: `cannot reach the service (${err.rawMessage}). Is the stack running? Start it with \`npm start\`, or point IDENTITY_URL (now ${where.identityUrl}) and AGENTS_URL (now ${where.agentsUrl}) at a running stack.`,
        code: 3,
      };
    }
    const fields = fieldErrorsOf(err);
    const detail = fields.length > 0 ? fields.map((f) => `${f.field} ${f.code}`).join("; ") : err.rawMessage;
    return { message: `${Code[err.code]}: ${detail}`, code: 1 };
  }
  return { message: err instanceof Error ? err.message : String(err), code: 1 };
}
