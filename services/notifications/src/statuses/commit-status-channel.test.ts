import { generateKeyPairSync, randomBytes } from "node:crypto";
import type { CommitStatus } from "@conveyor/ci-rules";
import { keyRingFrom } from "../providers/credential-envelope.js";
import { createGithubAppTokens, type OutboundCall } from "../providers/github-app.js";
import { createMemorySourceProviderRepository } from "../providers/memory-source-provider-repository.js";
import { createSourceProviders } from "../providers/source-providers.js";
import type { DeliveryDoc } from "../store/delivery-repository.js";
import { createCommitStatusChannel } from "./commit-status-channel.js";
import type { CommitStatusRequest } from "./commit-status-request.js";
import { createMemoryStatusMarkRepository } from "./memory-status-mark-repository.js";

const SHA = "0123456789abcdef0123456789abcdef01234567";

async function setup(
  answer: (url: string) => { status: number; body: string } | Error = () => ({ status: 201, body: "{}" }),
) {
  const repository = createMemorySourceProviderRepository();
  const providers = createSourceProviders({
    repository,
    keyRing: keyRingFrom(randomBytes(32).toString("base64"), ""),
    now: () => new Date(),
  });
  const connection = await providers.create({
    organizationId: "org-1",
    kind: "gitea",
    apiUrl: "http://127.0.0.1:3000",
    token: "secret-token",
    description: "",
    createdBy: "u",
  });
  const marks = createMemoryStatusMarkRepository();
  const sent: Array<{ url: string; headers: Record<string, string>; body: Record<string, unknown> }> = [];
  const call: OutboundCall = async (r) => {
    sent.push({ url: r.url, headers: r.headers, body: JSON.parse(r.body ?? "{}") });
    const a = answer(r.url);
    if (a instanceof Error) throw a;
    return a;
  };
  const channel = createCommitStatusChannel({
    connections: repository,
    providers,
    marks,
    call,
    appTokens: createGithubAppTokens({ call, now: () => new Date() }),
    now: () => new Date(),
    retryableError: (err) => !(err instanceof Error && err.message.includes("refused")),
  });
  const delivery = (status: Partial<CommitStatus>, over: Partial<CommitStatusRequest> = {}) =>
    ({
      request: {
        connectionId: connection._id,
        organizationId: "org-1",
        repository: { host: "127.0.0.1", port: 3000, owner: "alice", name: "widgets", path: "alice/widgets" },
        sha: SHA,
        status: {
          context: "buildkite/widgets",
          state: "pending",
          description: "Build #7 is running",
          targetUrl: "http://ci.local/acme/widgets/builds/7",
          canceled: false,
          order: [7, 2],
          ...status,
        },
        ...over,
      },
    }) as unknown as DeliveryDoc;
  return { channel, delivery, sent, marks, repository, connection };
}

const signal = new AbortController().signal;

describe("the commit-status channel", () => {
  it("posts the forge's request with the connection's token and raises the mark", async () => {
    const { channel, delivery, sent, marks } = await setup();
    expect(await channel.send(delivery({}), signal)).toEqual({
      ok: true,
      responseCode: 201,
      error: "",
      retryable: false,
    });
    expect(sent).toEqual([
      {
        url: `http://127.0.0.1:3000/api/v1/repos/alice/widgets/statuses/${SHA}`,
        headers: expect.objectContaining({ Authorization: "token secret-token", "Content-Type": "application/json" }),
        body: {
          state: "pending",
          target_url: "http://ci.local/acme/widgets/builds/7",
          description: "Build #7 is running",
          context: "buildkite/widgets",
        },
      },
    ]);
    expect([...marks.marks.values()].map((m) => m.state)).toEqual(["pending"]);
  });

  it("does not send a status at or below the last one sent for its commit and context", async () => {
    const { channel, delivery, sent } = await setup();
    await channel.send(delivery({ state: "success", order: [7, 5] }), signal);
    // A late pending of the same build, then the same success again (a redelivery): neither is sent.
    expect((await channel.send(delivery({ state: "pending", order: [7, 3] }), signal)).ok).toBe(true);
    expect((await channel.send(delivery({ state: "success", order: [7, 5] }), signal)).ok).toBe(true);
    // An older build's final state after a newer build's pending: not sent either.
    await channel.send(delivery({ state: "pending", order: [8, 1] }), signal);
    expect((await channel.send(delivery({ state: "failure", order: [7, 9] }), signal)).ok).toBe(true);
    expect(sent.map((s) => s.body.state)).toEqual(["success", "pending"]);
  });

  it("keeps marks apart per context and commit", async () => {
    const { channel, delivery, sent } = await setup();
    await channel.send(delivery({ order: [7, 5] }), signal);
    await channel.send(delivery({ order: [7, 1], context: "buildkite/widgets/Tests" }), signal);
    await channel.send(delivery({ order: [7, 1] }, { sha: "f".repeat(40) }), signal);
    expect(sent).toHaveLength(3);
  });

  it("reports a 5xx or 429 as worth retrying, and leaves the mark so the retry is sent", async () => {
    let answer = { status: 502, body: "<html>bad gateway</html>" };
    const { channel, delivery, sent } = await setup(() => answer);
    expect(await channel.send(delivery({}), signal)).toEqual({
      ok: false,
      responseCode: 502,
      error: "gitea answered 502: <html>bad gateway</html>",
      retryable: true,
    });
    answer = { status: 429, body: "" };
    expect(await channel.send(delivery({}), signal)).toMatchObject({ retryable: true, error: "gitea answered 429" });
    answer = { status: 201, body: "{}" };
    expect((await channel.send(delivery({}), signal)).ok).toBe(true);
    expect(sent).toHaveLength(3);
  });

  it("reports a 4xx as final, its answer cut short", async () => {
    const { channel, delivery } = await setup(() => ({ status: 422, body: `{"message":"${"x".repeat(1000)}"}` }));
    const outcome = await channel.send(delivery({}), signal);
    expect(outcome).toMatchObject({ ok: false, responseCode: 422, retryable: false });
    expect(outcome.error.length).toBeLessThan(260);
  });

  it("reports a network failure as retryable and a refused address as final", async () => {
    const network = await setup(() => new Error("socket hang up"));
    expect(await network.channel.send(network.delivery({}), signal)).toMatchObject({ ok: false, retryable: true });
    const refused = await setup(() => new Error("refused: 10.0.0.1 is a private address"));
    expect(await refused.channel.send(refused.delivery({}), signal)).toMatchObject({ ok: false, retryable: false });
  });

  it("fails a delivery whose connection was removed, sending nothing", async () => {
    const { channel, delivery, sent, repository, connection } = await setup();
    await repository.remove("org-1", connection._id);
    expect(await channel.send(delivery({}), signal)).toMatchObject({
      ok: false,
      retryable: false,
      error: "the source provider was removed",
    });
    expect(sent).toEqual([]);
  });

  it("fails a delivery that is not a commit status", async () => {
    const { channel } = await setup();
    const outcome = await channel.send({ request: { url: "http://x" } } as unknown as DeliveryDoc, signal);
    expect(outcome).toMatchObject({ ok: false, retryable: false });
  });

  it("never puts the token in an error", async () => {
    const { channel, delivery } = await setup(() => ({ status: 401, body: "bad credentials" }));
    const outcome = await channel.send(delivery({}), signal);
    expect(outcome.error).toBe("gitea answered 401: bad credentials");
    expect(outcome.error).not.toContain("secret-token");
  });

  it("sends through a GitHub App: the repository's installation token, made again after a 401", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const repository = createMemorySourceProviderRepository();
    const providers = createSourceProviders({
      repository,
      keyRing: keyRingFrom(randomBytes(32).toString("base64"), ""),
      now: () => new Date(),
    });
    const connection = await providers.create({
      organizationId: "org-1",
      kind: "github",
      apiUrl: "",
      token: "",
      appId: "99",
      privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      description: "",
      createdBy: "u",
    });
    const seen: string[] = [];
    let issued = 0;
    let statusAnswer = 401;
    const call: OutboundCall = async (r) => {
      seen.push(
        `${r.method} ${r.url} ${r.headers.Authorization?.split(" ")[0]} ${r.headers.Authorization?.startsWith("Bearer ghs_") ? r.headers.Authorization : ""}`.trim(),
      );
      if (r.url.endsWith("/installation")) return { status: 200, body: '{"id":5}' };
      if (r.url.endsWith("/access_tokens")) return { status: 201, body: JSON.stringify({ token: `ghs_${++issued}` }) };
      return { status: statusAnswer, body: "" };
    };
    const channel = createCommitStatusChannel({
      connections: repository,
      providers,
      marks: createMemoryStatusMarkRepository(),
      call,
      appTokens: createGithubAppTokens({ call, now: () => new Date() }),
      now: () => new Date(),
    });
    const delivery = {
      request: {
        connectionId: connection._id,
        organizationId: "org-1",
        repository: { host: "github.com", port: null, owner: "acme", name: "widgets", path: "acme/widgets" },
        sha: SHA,
        status: { context: "buildkite/w", state: "success", description: "d", targetUrl: "http://x", order: [1, 1] },
      },
    } as unknown as DeliveryDoc;
    expect(await channel.send(delivery, signal)).toMatchObject({ ok: false, retryable: true, responseCode: 401 });
    statusAnswer = 201;
    expect(await channel.send(delivery, signal)).toMatchObject({ ok: true, responseCode: 201 });
    expect(seen.filter((l) => l.includes("/statuses/"))).toEqual([
      `POST https://api.github.com/repos/acme/widgets/statuses/${SHA} Bearer Bearer ghs_1`,
      `POST https://api.github.com/repos/acme/widgets/statuses/${SHA} Bearer Bearer ghs_2`,
    ]);
  });
});
