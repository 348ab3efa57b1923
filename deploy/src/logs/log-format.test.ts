import { formatLogTail } from "./log-format.js";

describe("formatLogTail", () => {
  it("turns pino JSON lines into level, message and error, and keeps other lines", () => {
    const tail = [
      JSON.stringify({ level: 30, time: 1, msg: "connecting" }),
      JSON.stringify({
        level: 60,
        msg: "identity service failed to start",
        err: { type: "MongoServerSelectionError", message: "connect ECONNREFUSED" },
      }),
      "plain text",
    ].join("\n");
    expect(formatLogTail(tail)).toBe(
      "INFO connecting\nFATAL identity service failed to start (MongoServerSelectionError: connect ECONNREFUSED)\nplain text",
    );
  });
});
