import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { type Measurement, measure, measureIdle, settle, type Target } from "./bench-measure.js";
import { type BenchSettings, median } from "./bench-stats.js";

// The pages' rows of `npm run bench` (docs/pages.md): a full organization page (30 pipelines, each with builds for
// its bars), a pipeline page, and the page of a build of 200 jobs, read by a signed-in administrator as a browser
// reads them. They are measured in a phase of their own, once the stack has settled after the REST rows' creates
// (issue 32 asks for them on a warm stack): server time is the median of single requests (`idle`), beside the
// idle REST read of a build and the hello-world baseline of the same phase; autocannon's p50 under load follows.

/** Pipelines the organization page shows on its first page, and builds each gets for its bars. */
const PAGE_PIPELINES = 30;
const BUILDS_PER_PIPELINE = 10;
/** The jobs of the large build whose page is measured. */
export const LARGE_BUILD_JOBS = 200;

/** Names of the pipelines this module makes (never "Bench…", which names the REST rows' pipeline). */
const PREFIX = "Pages bench";

const configuration = (parallelism: number) =>
  `steps:\n  - command: make test\n    parallelism: ${parallelism}\n    agents: {queue: bench-idle}\n`;

/** A page row: a target with the server time issue 32 asks of it. */
export interface PageTarget extends Target {
  targetMs: number;
}

interface Where {
  apiUrl: string;
  token: string;
  orgSlug: string;
  /** The identity service, to sign a person in as `ci-admin user login-link` does. */
  identityUrl: string;
  /** The cluster of the REST rows' pipeline, which these pipelines join. */
  clusterId: string;
}

/** A session cookie of a new administrator of the organization (signed in by link, as `ci-admin user login-link`). */
export async function adminCookie(w: { identityUrl: string }, organizationId: string): Promise<string> {
  const identity = createServiceClient(IdentityService, w.identityUrl);
  const { user } = await identity.createUser({ name: "Bench Admin", email: `bench-pages-${Date.now()}@example.com` });
  await identity.addMember({ organization: organizationId, userId: user?.id ?? "", role: Role.ADMIN });
  const link = await identity.createSignInLink({ userId: user?.id ?? "" });
  const session = await identity.signInWithLink({ secret: link.secret });
  return `conveyor_session=${session.secret}`;
}

/**
 * Makes (once per stack) the pages' pipelines and builds, signs an administrator in, and answers the three page
 * targets: `/{org}`, `/{org}/{pipeline}` and `/{org}/{pipeline}/builds/1` of the 200-job build.
 */
export async function pageTargets(w: Where, say: (line: string) => void): Promise<PageTarget[]> {
  const headers = { authorization: `Bearer ${w.token}`, "content-type": "application/json" };
  const org = `${w.apiUrl}/v2/organizations/${w.orgSlug}`;
  const { id: organizationId } = (await (await fetch(org, { headers })).json()) as { id: string };
  const list = (await (await fetch(`${org}/pipelines?per_page=100`, { headers })).json()) as Array<{
    slug: string;
    name: string;
  }>;
  const have = new Map(list.filter((p) => p.name.startsWith(PREFIX)).map((p) => [p.name, p.slug]));
  const ensure = async (name: string, parallelism: number, builds: number): Promise<string> => {
    let slug = have.get(name);
    if (!slug) {
      const res = await fetch(`${org}/pipelines`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          name,
          repository: "https://example.com/bench.git",
          cluster_id: w.clusterId,
          configuration: configuration(parallelism),
        }),
      });
      if (res.status !== 201) throw new Error(`bench pages: creating ${name} answered ${res.status}`);
      slug = ((await res.json()) as { slug: string }).slug;
      have.set(name, slug);
      for (let n = 0; n < builds; n++) {
        const created = await fetch(`${org}/pipelines/${slug}/builds`, {
          method: "POST",
          headers,
          body: JSON.stringify({ commit: "HEAD", branch: "main", message: `pages bench build ${n + 1}` }),
        });
        if (created.status !== 201) throw new Error(`bench pages: a build of ${name} answered ${created.status}`);
      }
    }
    return slug;
  };
  say(`pages: ${PAGE_PIPELINES} pipelines of ${BUILDS_PER_PIPELINE} builds, and a build of ${LARGE_BUILD_JOBS} jobs…`);
  const large = await ensure(`${PREFIX} ${LARGE_BUILD_JOBS} jobs`, LARGE_BUILD_JOBS, 1);
  for (let i = 1; i < PAGE_PIPELINES; i++)
    await ensure(`${PREFIX} ${String(i).padStart(2, "0")}`, 1, BUILDS_PER_PIPELINE);
  const pipeline = await ensure(`${PREFIX} 01`, 1, BUILDS_PER_PIPELINE);
  const cookie = await adminCookie(w, organizationId);
  const page = { cookie, accept: "text/html", "accept-encoding": "identity" };
  // A page's cost is spread over the gateway and the services it reads: CPU per request says where it goes.
  // Each with issue 32's target for its server time.
  const targets: PageTarget[] = [
    { name: "page /{org} (30 pipelines)", url: `${w.apiUrl}/${w.orgSlug}`, headers: page, cpu: true, targetMs: 30 },
    {
      name: "page /{org}/{pipeline}",
      url: `${w.apiUrl}/${w.orgSlug}/${pipeline}`,
      headers: page,
      cpu: true,
      targetMs: 30,
    },
    {
      name: `page …/builds/{n} (${LARGE_BUILD_JOBS} jobs)`,
      url: `${w.apiUrl}/${w.orgSlug}/${large}/builds/1`,
      headers: page,
      cpu: true,
      targetMs: 50,
    },
  ];
  // A page that does not answer 200 with HTML would measure an error page: refuse to measure it.
  for (const t of targets) {
    const res = await fetch(t.url, { headers: t.headers, redirect: "manual" });
    const body = await res.text();
    if (res.status !== 200 || !body.includes("<html")) {
      throw new Error(`bench pages: ${t.name} answered ${res.status} ${body.slice(0, 200)}`);
    }
  }
  return targets;
}

/** One page's figures: single requests (server time) and autocannon's under load, with CPU per view. */
export interface PageRow {
  target: string;
  targetMs: number;
  serverMs: number;
  p50Ms: number;
  reqPerSec: number;
  cpuMsPerView: Record<string, number>;
}

export interface PagePhase {
  /** How long the stack took to settle, the probe's last median, and whether it settled within the bound. */
  settle: { waitedMs: number; probeMs: number; settled: boolean };
  /** Single requests of the baselines of the phase: the hello-world and the REST read of a build. */
  helloMs: number;
  restMs: number;
  rows: PageRow[];
  results: Measurement[];
}

/**
 * Measures the pages on a settled stack: waits until `restRead` (a REST read of a build) is fast (bench-measure.ts's
 * `settle`), times single requests of the baselines and the pages, then runs the pages `trials` times under load.
 */
export async function runPagePhase(
  pages: readonly PageTarget[],
  baselines: { hello: Target; restRead: Target },
  settings: BenchSettings,
  pids: Record<string, number>,
  say: (line: string) => void,
): Promise<PagePhase> {
  const settled = await settle(baselines.restRead);
  say(
    settled.settled
      ? `pages: the stack settled in ${(settled.waitedMs / 1000).toFixed(1)} s (a REST read of a build: ${settled.probeMs.toFixed(1)} ms)`
      : `pages: the stack did NOT settle in ${(settled.waitedMs / 1000).toFixed(0)} s (a REST read of a build: ${settled.probeMs.toFixed(0)} ms); measuring anyway`,
  );
  const idle = await measureIdle([baselines.hello, baselines.restRead, ...pages]);
  const results: Measurement[] = [];
  for (let trial = 1; trial <= settings.trials; trial++)
    for (const t of pages) results.push(await measure(t, trial, settings, settings.durationSec, pids));
  const rows = pages.map((t): PageRow => {
    const runs = results.filter((r) => r.target === t.name);
    const names = Object.keys(runs[0]?.cpuMsPerRequest ?? {});
    return {
      target: t.name,
      targetMs: t.targetMs,
      serverMs: idle.get(t.name) ?? Number.NaN,
      p50Ms: median(runs.map((r) => r.p50Ms)),
      reqPerSec: median(runs.map((r) => r.reqPerSec)),
      cpuMsPerView: Object.fromEntries(
        names.map((n) => [n, median(runs.map((r) => r.cpuMsPerRequest?.[n] ?? Number.NaN))]),
      ),
    };
  });
  return {
    settle: settled,
    helloMs: idle.get(baselines.hello.name) ?? Number.NaN,
    restMs: idle.get(baselines.restRead.name) ?? Number.NaN,
    rows,
    results,
  };
}

/** The page rows of the summary: server time against issue 32's targets and as ratios to the phase's baselines. */
export function printPageRows(p: PagePhase, connections: number, say: (line: string) => void): void {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : "–");
  say(
    `
pages (settled stack)${" ".repeat(13)} ${"server ms".padStart(9)} ${"target".padStart(7)} ${"× REST".padStart(7)} ${`p50 c=${connections}`.padStart(9)} ${"req/s".padStart(7)}`,
  );
  say(`${"baseline: fastify hello-world".padEnd(34)} ${f(p.helloMs).padStart(9)}`);
  say(
    `${"baseline: REST GET …/builds/{number}".padEnd(34)} ${f(p.restMs).padStart(9)} ${"".padStart(7)} ${"1".padStart(7)}`,
  );
  for (const r of p.rows) {
    const met = r.serverMs <= r.targetMs ? `≤${r.targetMs}` : `>${r.targetMs}!`;
    say(
      `${r.target.padEnd(34)} ${f(r.serverMs).padStart(9)} ${met.padStart(7)} ${f(r.serverMs / p.restMs).padStart(7)} ${f(r.p50Ms).padStart(9)} ${f(r.reqPerSec).padStart(7)}`,
    );
  }
  for (const r of p.rows) {
    const cpu = Object.entries(r.cpuMsPerView).filter(([, ms]) => Number.isFinite(ms) && ms > 0.05);
    const total = cpu.reduce((sum, [, ms]) => sum + ms, 0);
    say(
      `CPU ms per view, ${r.target}: ${cpu.map(([n, ms]) => `${n} ${ms.toFixed(1)}`).join(", ")} (total ${total.toFixed(1)})`,
    );
  }
}
