import { Role } from "@conveyor/proto/identity";
import { createLogger } from "@conveyor/runtime";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { buildApp } from "../../services/gateway/src/app/build-app.js";
import { createGatewayClients } from "../../services/gateway/src/clients/gateway-clients.js";
import { readGatewayConfig } from "../../services/gateway/src/config.js";
import { createLiveHub, LIVE_PACE, type LiveHub } from "../../services/gateway/src/web/live/live-hub.js";
import { plainText, splitLog } from "../../services/gateway/src/web/log/log-lines.js";
import { SESSION_COOKIE } from "../../services/gateway/src/web/session/session-cookie.js";
import { localRepository, startAgent, stopAllAgents } from "../support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, identity, send, stack, unique } from "../support/stack-env.js";

// A build page's live stream end to end (docs/pages.md#live-updates): the real agent runs a job that prints lines
// over a few seconds while plain HTTP clients read the stream of the stack's gateway and of two more gateways
// started here over the stack's services and NATS (as gateway replicas). Each sees the job's and the build's state
// change and every line of the log exactly once at its byte offset, also a client cut off mid-job that reconnects
// to another gateway with its Last-Event-ID; and each gateway drops its NATS subscription once its pages are gone.

jest.setTimeout(120_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

const LINES = 40;
/** Prints LINES lines of growing length, a tenth of a second apart: several chunks, some lines across two. */
const COMMAND = `for i in $(seq 1 ${LINES}); do printf 'line %s %s\\n' "$i" "$(printf '%*s' "$((i * 7))" '' | tr ' ' x)"; sleep 0.1; done`;

interface Gateway {
  url: string;
  hub: LiveHub;
  stop(): Promise<void>;
}

/** A gateway of this process over the stack's services and NATS, with its own live hub. */
async function startGateway(): Promise<Gateway> {
  const config = readGatewayConfig({ ...process.env, PORT: "0", LOG_LEVEL: "silent" });
  const nc: NatsConnection = await connect({ servers: config.natsUrl, name: "live-e2e" });
  const logger = createLogger("gateway", "silent");
  const hub = createLiveHub({ nc, logger, settings: { ...LIVE_PACE, ...config.liveStreams } });
  const { app } = await buildApp({ config, clients: createGatewayClients(config), live: hub });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    hub,
    stop: async () => {
      await app.close();
      await nc.drain();
    },
  };
}

interface SseEvent {
  event: string;
  id: string;
  data: Json;
}

/** A plain HTTP reader of an event stream: the events so far, waits for one, and a cut. */
function openStream(url: string, cookie: string, lastEventId?: string) {
  const events: SseEvent[] = [];
  const abort = new AbortController();
  let wake: (() => void) | undefined;
  let status = 0;
  let ended = false;
  const done = (async () => {
    const res = await fetch(url, {
      headers: { cookie, accept: "text/event-stream", ...(lastEventId ? { "last-event-id": lastEventId } : {}) },
      signal: abort.signal,
    });
    status = res.status;
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    let id = "";
    try {
      for await (const piece of res.body) {
        buffer += decoder.decode(piece, { stream: true });
        for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = "";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            if (line.startsWith("id: ")) id = line.slice(4);
            if (line.startsWith("data: ")) data = line.slice(6);
          }
          if (event) events.push({ event, id, data: JSON.parse(data) });
          wake?.();
        }
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
    ended = true;
    wake?.();
  })();
  return {
    events,
    status: () => status,
    ended: () => ended,
    done,
    /** Waits until `test` holds of the events, for at most `ms`. */
    async until(test: (events: SseEvent[]) => boolean, ms = 60_000) {
      const deadline = Date.now() + ms;
      while (!test(events)) {
        if (ended || Date.now() > deadline)
          throw new Error(`the stream ${ended ? "ended" : "timed out"}; events: ${events.map((e) => e.event)}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
    },
    cut() {
      abort.abort();
    },
  };
}

/** The lines a page shows after applying log events as its script does: by anchor, the latest kept. */
function applyLines(shown: Map<number, string>, events: readonly SseEvent[], jobId: string) {
  for (const e of events) {
    if (e.event !== "log" || e.data.job !== jobId) continue;
    const html: string = e.data.html;
    for (const m of html.matchAll(
      /<span class="l(?: h)?" id="L(\d+)">(.*?)<\/span>(?=<span class="l|<\/summary>|<\/div>|<\/details>|$)/g,
    )) {
      const text = (m[2] ?? "").replace(/<a class="n"[^>]*>.*?<\/a>/, "").replace(/<time[^>]*>.*?<\/time>/, "");
      shown.set(Number(m[1]), unescapeHtml(text.replace(/<[^>]*>/g, "")));
    }
  }
  return shown;
}
/** Text from HTML: the named entities the renderers write, and numeric ones (ansi_up writes &#x27;). */
const unescapeHtml = (s: string) =>
  s
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&amp;", "&");

/** The log's lines by offset, as the page renders them (header lines show their title). */
function expectedLines(raw: Uint8Array): Map<number, string> {
  return new Map(
    splitLog(raw)
      .filter((l) => !l.expandsPrevious)
      .map((l) => [l.offset, plainText(l.header ? l.header.title : l.text)]),
  );
}

/** The offsets each stream's log events resume at: they only grow, and each reconnect starts where it left. */
function resumePoints(events: readonly SseEvent[], jobId: string): number[] {
  return events
    .filter((e) => e.event === "log" && e.data.job === jobId)
    .map((e) =>
      Number(
        e.id
          .split(",")
          .find((c) => c.startsWith(`${jobId}:`))
          ?.split(":")[1],
      ),
    );
}

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let cookie: string;
let gateways: Gateway[] = [];

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_build_logs"],
    role: Role.ADMIN,
  });
  clusterId = await arrangeCluster(org.organization.id);
  const { secret: agentToken } = await agents.createAgentToken({ organizationId: org.organization.id, clusterId });
  startAgent({ token: agentToken });
  const link = await identity.createSignInLink({ userId: org.user.id });
  const session = await identity.signInWithLink({ secret: link.secret });
  cookie = `${SESSION_COOKIE}=${session.secret}`;
  gateways = [await startGateway(), await startGateway()];
});

afterAll(async () => {
  await stopAllAgents();
  await Promise.all(gateways.map((g) => g.stop()));
});

describe("a build page's live stream", () => {
  it("shows the job's states and every log line once, across gateways and a reconnect with Last-Event-ID", async () => {
    const base = `/v2/organizations/${org.organization.slug}`;
    const created = await send("POST", `${base}/pipelines`, org.secret, {
      name: unique("Live"),
      repository: localRepository(),
      cluster_id: clusterId,
      configuration: JSON.stringify({ steps: [{ label: "lines", command: COMMAND }] }),
    });
    expect(created.status).toBe(201);
    const slug = created.body.slug;
    const build = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
      message: "live",
    });
    expect(build.status).toBe(201);
    const jobId: string = build.body.jobs[0].id;
    const path = `/${org.organization.slug}/${slug}/builds/${build.body.number}/live?logs=${jobId}:0`;
    const [one, two] = gateways as [Gateway, Gateway];

    // A: the stack's own gateway from start to end. B: a second gateway, cut off once it has some lines, then
    // resumed on a third with the Last-Event-ID it got.
    const a = openStream(`${stack.apiUrl}${path}`, cookie);
    const b = openStream(`${one.url}${path}`, cookie);
    await b.until((events) => resumePoints(events, jobId).some((offset) => offset > 200));
    // Lines came while the job ran: from NATS notices (nothing else reads the log before the job finishes).
    expect(b.events.some((e) => e.event === "job" && e.data.id === jobId && e.data.state === "passed")).toBe(false);
    expect(one.hub.feeds.stats()).toMatchObject({ jobs: 1, listeners: 1 });
    const lastId = b.events.filter((e) => e.event === "log").at(-1)?.id ?? "";
    b.cut();
    await b.done;
    // The gateway let go of the job's subject once its only page left.
    await waitUntil(() => one.hub.feeds.stats().jobs === 0 && one.hub.events.watched() === 0);
    const resumed = openStream(`${two.url}${path}`, cookie, lastId);

    for (const s of [a, resumed]) await s.until((events) => events.at(-1)?.event === "end");
    for (const s of [a, resumed]) await s.done;
    expect([a.status(), b.status(), resumed.status()]).toEqual([200, 200, 200]);

    const raw = new Uint8Array(
      await (
        await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${build.body.number}/jobs/${jobId}/log.txt`, {
          headers: { authorization: `Bearer ${org.secret}` },
        })
      ).arrayBuffer(),
    );
    const expected = expectedLines(raw);
    for (let i = 1; i <= LINES; i++) expect([...expected.values()]).toContain(`line ${i} ${"x".repeat(i * 7)}`);
    // Start to end on one gateway: every line, at its offset, as the log has it.
    expect(applyLines(new Map(), a.events, jobId)).toEqual(expected);
    // Cut and resumed: together every line; the resumed stream sends nothing before where the first one stopped.
    const resumeAt = Number(lastId.split(":")[1]);
    const firstAfter = resumed.events.find((e) => e.event === "log");
    expect(firstAfter?.data.from).toBe(resumeAt);
    expect(applyLines(applyLines(new Map(), b.events, jobId), resumed.events, jobId)).toEqual(expected);
    // Positions only grow, and end at the log's end.
    for (const s of [a, resumed]) {
      const points = resumePoints(s.events, jobId);
      expect([...points].sort((x, y) => x - y)).toEqual(points);
      expect(points.at(-1)).toBe(raw.length);
    }
    // Most lines reached the page before the job finished: they arrived live, not in the last read.
    const finishedAt = a.events.findIndex((e) => e.event === "job" && e.data.id === jobId && e.data.state === "passed");
    const halfwayAt = a.events.findIndex(
      (e) => e.event === "log" && String(e.data.html).includes(`line ${LINES / 2} `),
    );
    expect(halfwayAt).toBeGreaterThan(-1);
    expect(halfwayAt).toBeLessThan(finishedAt);
    // The job's state changes arrived as they happened, then the build's.
    const jobStates = a.events.filter((e) => e.event === "job" && e.data.id === jobId).map((e) => e.data.state);
    expect(jobStates).toContain("passed");
    expect(a.events.filter((e) => e.event === "build").map((e) => e.data.state)).toContain("passed");
    expect(a.events.at(-1)?.data).toEqual({ state: "passed" });
    // Nothing stays subscribed on either gateway.
    await waitUntil(() => gateways.every((g) => g.hub.feeds.stats().jobs === 0 && g.hub.events.watched() === 0));
  });

  it("is for signed-in people who may read the build: others get no stream", async () => {
    const other = await arrangeOrgUser({ scopes: ["read_builds"] });
    const link = await identity.createSignInLink({ userId: other.user.id });
    const session = await identity.signInWithLink({ secret: link.secret });
    const path = `/${org.organization.slug}/any/builds/1/live`;
    const stranger = await fetch(`${gateways[0]?.url}${path}`, {
      headers: { cookie: `${SESSION_COOKIE}=${session.secret}` },
      redirect: "manual",
    });
    await stranger.text();
    expect(stranger.status).toBe(404);
    const nobody = await fetch(`${gateways[0]?.url}${path}`, { redirect: "manual" });
    await nobody.text();
    expect(nobody.status).toBe(302);
    expect(nobody.headers.get("location")).toMatch(/^\/login\?next=/);
  });
});

async function waitUntil(test: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
