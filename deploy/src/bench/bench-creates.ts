/**
 * The bench's check of build creation under load: a probe creates, cancels and reads back builds while the load
 * creates others on the same pipeline (no read may be older than what the probe was answered), then every create is
 * looked for in the listing and the pipeline's counters compared with it (create-invariants.ts).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { PipelineCounters } from "../faults/fault-invariants.js";
import { type Answer, type Api, listBuilds } from "../rest/rest-client.js";
import { type CreateCheck, checkCreates, type StaleProbe, staleState } from "./create-invariants.js";

/** Probe clients at a time, each creating, canceling and reading back its own builds. */
const PROBE_CLIENTS = 3;

/** How long the counters may take to converge after the last create (they are recounted at most every 250 ms). */
const SETTLE_MS = 30_000;

interface BuildAnswer {
  number: number;
  state: string;
  created_at: string;
}

/** The pipeline's highest build number (0 before its first build). */
export async function highestNumber(api: Api, buildsPath: string): Promise<number> {
  const res = await api("GET", `${buildsPath}?per_page=1`);
  if (res.status !== 200) throw new Error(`listing builds answered ${res.status}`);
  return (res.body as BuildAnswer[])[0]?.number ?? 0;
}

/**
 * Starts the probe on `buildsPath`: PROBE_CLIENTS loops that, until stopped, create a build, read it and the first
 * page, cancel it, and read both again, plainly and with the ETags from before the cancel.
 */
export function startStaleProbe(api: Api, buildsPath: string): { stop: () => Promise<StaleProbe> } {
  const probe: StaleProbe = { created: 0, reads: 0, conditional: 0, stale: [], errors: [] };
  let stopping = false;
  const page = `${buildsPath}?per_page=30`;

  /** Checks a read of build `n` (from the build route, or its entry on a page) against what was acknowledged. */
  const check = (what: string, acknowledged: BuildAnswer, res: Answer, fromPage: boolean) => {
    const { number: n, state } = acknowledged;
    probe.reads++;
    if (res.status === 304) {
      probe.stale.push(`${what}: 304 Not Modified after #${n} became ${state}`);
      return;
    }
    if (res.status !== 200) {
      (res.status === 404 ? probe.stale : probe.errors).push(`${what}: ${res.status} for #${n}`);
      return;
    }
    const read = fromPage ? (res.body as BuildAnswer[]).find((b) => b.number === n) : (res.body as BuildAnswer);
    if (!read) {
      // Newer builds may have pushed it off the first page; a page that shows an older build without it is stale.
      const createdAt = Date.parse(acknowledged.created_at);
      const older = (res.body as BuildAnswer[]).find((b) => Date.parse(b.created_at) < createdAt);
      if (older) probe.stale.push(`${what}: #${n} missing, older #${older.number} shown`);
      return;
    }
    if (staleState(state, read.state)) probe.stale.push(`${what}: #${n} ${read.state}, acknowledged ${state}`);
  };
  const etag = (res: Answer) => res.headers?.get("etag") ?? undefined;

  const round = async () => {
    const created = await api("POST", buildsPath, {
      commit: "HEAD",
      branch: "bench-probe",
      message: "stale-read probe",
    });
    if (created.status !== 201) {
      probe.errors.push(`create: ${created.status}`);
      await sleep(100);
      return;
    }
    probe.created++;
    const first = created.body as BuildAnswer;
    const n = first.number;
    const buildBefore = await api("GET", `${buildsPath}/${n}`);
    check("GET build after create", first, buildBefore, false);
    const pageBefore = await api("GET", page);
    check("GET page after create", first, pageBefore, true);
    const canceled = await api("PUT", `${buildsPath}/${n}/cancel`);
    if (canceled.status !== 200) {
      probe.errors.push(`cancel #${n}: ${canceled.status}`);
      return;
    }
    const after = canceled.body as BuildAnswer;
    check("GET build after cancel", after, await api("GET", `${buildsPath}/${n}`), false);
    check("GET page after cancel", after, await api("GET", page), true);
    const buildTag = etag(buildBefore);
    if (buildTag) {
      probe.conditional++;
      const res = await api("GET", `${buildsPath}/${n}`, undefined, { "if-none-match": buildTag });
      check("GET build If-None-Match after cancel", after, res, false);
    }
    const pageTag = etag(pageBefore);
    const onPage = (pageBefore.body as BuildAnswer[] | undefined)?.some((b) => b.number === n);
    if (pageTag && onPage) {
      probe.conditional++;
      const res = await api("GET", page, undefined, { "if-none-match": pageTag });
      check("GET page If-None-Match after cancel", after, res, true);
    }
  };

  const running = Promise.all(
    Array.from({ length: PROBE_CLIENTS }, async () => {
      while (!stopping) await round();
    }),
  );
  return {
    stop: async () => {
      stopping = true;
      await running;
      return probe;
    },
  };
}

/**
 * Lists every build of the pipeline and checks the creates; the counters are read until they agree with the listing
 * or SETTLE_MS has passed (they are recounted in the background after a change).
 */
export async function verifyCreates(
  api: Api,
  pipelinePath: string,
  creates: { after: number; acknowledged: number; inFlight: number },
): Promise<CreateCheck> {
  const deadline = Date.now() + SETTLE_MS;
  const builds = await listBuilds(api, `${pipelinePath}/builds`);
  for (;;) {
    const res = await api("GET", pipelinePath);
    const counters = res.status === 200 ? (res.body as PipelineCounters) : undefined;
    const check = checkCreates({ ...creates, builds, counters });
    if (check.counterMismatches.length === 0 || Date.now() > deadline) return check;
    await sleep(500);
  }
}

/**
 * Runs `load` (more creates on the pipeline, answering how many were acknowledged) with the probe beside it, then
 * checks every create since `after`: `acknowledged` and `inFlight` count those before this load and in it.
 */
export async function checkCreatesUnderLoad(
  api: Api,
  pipelinePath: string,
  earlier: { after: number; acknowledged: number; inFlight: number },
  load: () => Promise<number>,
): Promise<{ check: CreateCheck; probe: StaleProbe }> {
  const running = startStaleProbe(api, `${pipelinePath}/builds`);
  const loaded = await load().catch(async (err: unknown) => {
    await running.stop();
    throw err;
  });
  const probe = await running.stop();
  const check = await verifyCreates(api, pipelinePath, {
    ...earlier,
    acknowledged: earlier.acknowledged + loaded + probe.created,
  });
  return { check, probe };
}
