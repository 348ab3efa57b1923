import { Code, ConnectError } from "@connectrpc/connect";
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { dependencyUnavailable, isDependencyUnavailable } from "./unavailable.js";

const named = (name: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...extra });

describe("isDependencyUnavailable", () => {
  it("recognizes an unreachable MongoDB, NATS or socket, also as a cause", () => {
    expect(isDependencyUnavailable(new MongoNetworkError("connect ECONNREFUSED 127.0.0.1:27117"))).toBe(true);
    expect(isDependencyUnavailable(new MongoServerSelectionError("Server selection timed out", {} as never))).toBe(
      true,
    );
    expect(isDependencyUnavailable(named("ClosedConnectionError"))).toBe(true);
    expect(isDependencyUnavailable(named("Error", { code: "ECONNREFUSED" }))).toBe(true);
    expect(
      isDependencyUnavailable(new Error("S3 request failed", { cause: named("Error", { code: "ECONNRESET" }) })),
    ).toBe(true);
  });

  it("leaves other failures alone: a command the server refused, a bug, a non-error", () => {
    expect(isDependencyUnavailable(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBe(false);
    expect(isDependencyUnavailable(new TypeError("x is undefined"))).toBe(false);
    expect(isDependencyUnavailable("ECONNREFUSED")).toBe(false);
    expect(isDependencyUnavailable(undefined)).toBe(false);
  });
});

describe("the dependencyUnavailable server interceptor", () => {
  const call = (fail: unknown) =>
    dependencyUnavailable(async () => {
      throw fail;
    })({} as never);

  it("answers Unavailable for an unreachable dependency, keeping the cause", async () => {
    const cause = new MongoNetworkError("connection reset");
    const err = await call(cause).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect((err as ConnectError).cause).toBe(cause);
  });

  it("passes ConnectErrors and other errors unchanged", async () => {
    const notFound = new ConnectError("No build found", Code.NotFound);
    await expect(call(notFound)).rejects.toBe(notFound);
    const bug = new TypeError("boom");
    await expect(call(bug)).rejects.toBe(bug);
  });
});
