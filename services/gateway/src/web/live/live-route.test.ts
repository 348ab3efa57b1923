import { type ClientRequest, get, type IncomingMessage } from "node:http";
import { gzipSync } from "node:zlib";
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createMemoryBuildsService } from "@conveyor/builds/testing";
import {
  BuildChangedSchema,
  BuildsService,
  JobEventType,
  JobLogChunkStoredSchema,
  JobStateChangedSchema,
} from "@conveyor/proto/builds";
import { type Principal, PrincipalSchema, Role } from "@conveyor/proto/identity";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { ALL_SCOPES, createLogger, jobLogSubject, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../../testing/test-app.js";
import { SESSION_COOKIE } from "../session/session-cookie.js";
import { createLiveHub, LIVE_PACE } from "./live-hub.js";

// The live stream's route over the gateway's test app: who may open it, its limits, and what a browser reads from it
// over HTTP (a listening app and fetch, since the answer is a stream), the builds service in memory announcing on a
// fake NATS as the real one does.

const acme = makeOrg("acme", "Acme");
const elsewhere = makeOrg("elsewhere", "Elsewhere");
const ann = makeUser(1, "Ann");
const eve = makeUser(2, "Eve");
const web = create(PipelineSchema, {
  id: "33333333-0000-4000-8000-000000000001",
  organizationId: acme.id,
  slug: "web",
  name: "Web",
  defaultBranch: "main",
});

const apps: FastifyInstance[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

async function world(limits = { perPerson: 2, total: 3 }) {
  const nats = createFakeNats();
  const memory = createMemoryBuildsService({
    logNotices: {
      stored: (chunk) =>
        nats.publish(
          jobLogSubject(chunk.jobId),
          toBinary(
            JobLogChunkStoredSchema,
            create(JobLogChunkStoredSchema, { ...chunk, offset: BigInt(chunk.offset) }),
          ),
        ),
    },
  });
  const bridge = <D extends DescMessage>(subject: string, schema: D) =>
    memory.events.subscribe(subject, schema, (event) => nats.publish(subject, toBinary(schema, event)));
  bridge(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema);
  bridge(SUBJECTS.builds.buildStateChanged, BuildChangedSchema);
  bridge(SUBJECTS.builds.buildFinished, BuildChangedSchema);
  const sessions = new Map<string, Principal>();
  const people: Array<[string, typeof ann, Array<[typeof acme, Role]>]> = [
    ["ann", ann, [[acme, Role.MEMBER]]],
    ["eve", eve, [[elsewhere, Role.ADMIN]]],
  ];
  for (const [secret, user, orgs] of people) {
    const principal = create(PrincipalSchema, makePrincipal(user, [...ALL_SCOPES], orgs));
    if (principal.token) principal.token.id = `session:${secret}`;
    sessions.set(secret, principal);
  }
  const hub = createLiveHub({
    nc: nats.nc,
    logger: createLogger("test", "silent"),
    settings: { ...LIVE_PACE, gapWaitMs: 5, ...limits },
  });
  const { app } = await buildTestApp(
    { orgs: [acme, elsewhere], users: [ann, eve], tokens: new Map(), revoked: [] },
    {
      identity: {
        authenticateSession(req) {
          const principal = sessions.get(req.secret);
          if (!principal) throw new ConnectError("ended", Code.Unauthenticated);
          return { principal };
        },
      },
      pipelines: {
        getPipeline(req) {
          if (req.organizationId !== acme.id || req.pipeline !== "web") throw new ConnectError("none", Code.NotFound);
          return { pipeline: web };
        },
      },
      teams: { listUserTeams: () => ({ teams: [] }) },
      builds: memory.service,
    },
    {},
    { live: hub },
  );
  apps.push(app);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const { build, jobs } = await memory.seedBuild({ organizationId: acme.id, pipelineId: web.id });
  const jobId = jobs[0]?.id ?? "";
  const builds = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  return { app, url, hub, nats, memory, builds, build, jobId };
}

type World = Awaited<ReturnType<typeof world>>;

/**
 * Reads a live stream over HTTP as EventSource would: its events as they come. Over node:http with a connection of
 * its own, closed with the stream (fetch's pool keeps connections the app's close would wait for).
 */
function stream(w: World, path: string, who = "ann", lastEventId?: string) {
  const events: Array<{ event: string; id?: string; data: Record<string, unknown> }> = [];
  let request: ClientRequest | undefined;
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    request = get(
      `${w.url}${path}`,
      {
        agent: false,
        headers: { cookie: `${SESSION_COOKIE}=${who}`, ...(lastEventId ? { "last-event-id": lastEventId } : {}) },
      },
      resolve,
    );
    request.on("error", reject);
  });
  const done = (async () => {
    const res = await response;
    let buffer = "";
    res.setEncoding("utf8");
    try {
      for await (const piece of res) {
        buffer += piece;
        for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
          const fields = Object.fromEntries(
            buffer
              .slice(0, cut)
              .split("\n")
              .filter((l) => !l.startsWith(":") && l.includes(": "))
              .map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]),
          );
          buffer = buffer.slice(cut + 2);
          if (fields.event) events.push({ event: fields.event, id: fields.id, data: JSON.parse(fields.data ?? "{}") });
        }
      }
    } catch (err) {
      if (!request?.destroyed) throw err;
    }
  })();
  return { events, response, done, close: () => request?.destroy() };
}

const livePath = (w: World, logs = "") => `/acme/web/builds/${w.build.number}/live${logs ? `?logs=${logs}` : ""}`;

async function runJob(w: World) {
  await w.builds.assignJob({ jobId: w.jobId, agent: { id: "agent-1", name: "one" } });
  await w.builds.acceptJob({ jobId: w.jobId, agentId: "agent-1" });
  await w.builds.transitionJob({ jobId: w.jobId, event: JobEventType.START });
}

describe("the live stream's route", () => {
  it("streams text/event-stream with the page's security headers to a person who may read the build", async () => {
    const w = await world();
    await runJob(w);
    const s = stream(w, livePath(w, `${w.jobId}:0`));
    const res = await s.response;
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    await waitFor(() => s.events.some((e) => e.event === "jobs"));
    expect(s.events[0]).toMatchObject({ event: "build", data: { state: "running" } });
    expect(String(s.events[0]?.data.html)).toContain('<span class="state');
    expect(String(s.events[1]?.data.html)).toContain(`id="${w.jobId}" data-state="running"`);
    // A job's row is the page's own markup, with the actions this person may take.
    await w.builds.appendJobLog({ jobId: w.jobId, sequence: 1, offset: 0n, size: 6, data: gzipSync("hello\n") });
    await waitFor(() => s.events.some((e) => e.event === "log"));
    const log = s.events.find((e) => e.event === "log");
    expect(log?.id).toBe(`${w.jobId}:6`);
    expect(log?.data).toMatchObject({ job: w.jobId, from: 0 });
    expect(String(log?.data.html)).toContain('<span class="t">hello</span>');
    s.close();
    await s.done;
    await waitFor(() => w.hub.limits.open() === 0);
    expect(w.hub.feeds.stats().jobs).toBe(0);
  });

  it("ends the stream once the build finished, after the last log bytes", async () => {
    const w = await world();
    await runJob(w);
    const s = stream(w, livePath(w, `${w.jobId}:0`));
    await waitFor(() => s.events.some((e) => e.event === "jobs"));
    await w.builds.transitionJob({ jobId: w.jobId, event: JobEventType.FINISH, exitStatus: 1 });
    await s.done;
    expect(s.events.at(-1)).toEqual({ event: "end", data: { state: "failed" } });
    expect(s.events.filter((e) => e.event === "job").map((e) => e.data.state)).toContain("failed");
    expect(w.hub.limits.open()).toBe(0);
  });

  it("ends its open streams when the gateway shuts down, so that the browsers reconnect elsewhere", async () => {
    const w = await world();
    await runJob(w);
    const s = stream(w, livePath(w, `${w.jobId}:0`));
    await waitFor(() => s.events.some((e) => e.event === "jobs"));
    await w.app.close();
    await s.done;
    expect(w.hub.limits.open()).toBe(0);
    expect(w.hub.feeds.stats().jobs).toBe(0);
  });

  it("sends a signed-out person to sign in, and answers 404 to one who may not read the pipeline", async () => {
    const w = await world();
    const signedOut = await w.app.inject({ method: "GET", url: livePath(w) });
    expect(signedOut.statusCode).toBe(302);
    expect(signedOut.headers.location).toBe(`/login?next=${encodeURIComponent(livePath(w))}`);
    const stranger = await w.app.inject({ method: "GET", url: livePath(w), cookies: { [SESSION_COOKIE]: "eve" } });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.headers["content-type"]).toContain("text/html");
    const noBuild = await w.app.inject({
      method: "GET",
      url: "/acme/web/builds/999/live",
      cookies: { [SESSION_COOKIE]: "ann" },
    });
    expect(noBuild.statusCode).toBe(404);
    expect(w.hub.limits.open()).toBe(0);
  });

  it("refuses malformed log positions with 400", async () => {
    const w = await world();
    for (const logs of ["nope", `${w.jobId}:-1`, `${w.jobId}:1e9`, Array(21).fill(`${w.jobId}:0`).join(",")]) {
      const res = await w.app.inject({
        method: "GET",
        url: `${livePath(w)}?logs=${encodeURIComponent(logs)}`,
        cookies: { [SESSION_COOKIE]: "ann" },
      });
      expect(res.statusCode).toBe(400);
    }
  });

  it("counts streams per person and per gateway: 429 and 503 past them, with Retry-After", async () => {
    const w = await world({ perPerson: 2, total: 3 });
    await runJob(w);
    const open = [stream(w, livePath(w)), stream(w, livePath(w))];
    for (const s of open) expect((await s.response).statusCode).toBe(200);
    const third = await w.app.inject({ method: "GET", url: livePath(w), cookies: { [SESSION_COOKIE]: "ann" } });
    expect(third.statusCode).toBe(429);
    expect(third.headers["retry-after"]).toBe("10");
    const w2 = await world({ perPerson: 5, total: 1 });
    await runJob(w2);
    const only = stream(w2, livePath(w2));
    expect((await only.response).statusCode).toBe(200);
    const full = await w2.app.inject({ method: "GET", url: livePath(w2), cookies: { [SESSION_COOKIE]: "ann" } });
    expect(full.statusCode).toBe(503);
    expect(full.headers["retry-after"]).toBe("10");
    for (const s of [...open, only]) {
      s.close();
      await s.done;
    }
    await waitFor(() => w.hub.limits.open() === 0 && w2.hub.limits.open() === 0);
  });
});
