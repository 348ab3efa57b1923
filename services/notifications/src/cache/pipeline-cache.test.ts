import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BuildSchema } from "@conveyor/proto/builds";
import { PipelineCountsSchema, PipelineSchema } from "@conveyor/proto/pipelines";
import { createNotifyHandler } from "../notify/notify-handler.js";
import { createRpcStatusSources } from "../statuses/status-sources.js";
import { createPayloads } from "../webhooks/payloads.js";
import { createPipelineCache, pipelineRules } from "./pipeline-cache.js";

const ORG = "o-1";
const NOTIFYING = "notify:\n  - email: dev@example.com\nsteps:\n  - command: make\n";

/** A pipelines service over pipelines the test edits, counting its calls; "gone" is not found, "down" fails. */
function fakePipelines() {
  const configurations = new Map<string, string>([
    ["p-1", NOTIFYING],
    ["p-2", "steps:\n  - command: make\n"],
  ]);
  const asked: string[] = [];
  const client = {
    async getPipeline(req: { organizationId: string; pipeline: string }) {
      asked.push(req.pipeline);
      await new Promise((resolve) => setTimeout(resolve, 2));
      if (req.pipeline === "down") throw new ConnectError("unavailable", Code.Unavailable);
      const configuration = configurations.get(req.pipeline);
      if (configuration === undefined) throw new ConnectError("No pipeline found", Code.NotFound);
      const pipeline = create(PipelineSchema, {
        id: req.pipeline,
        organizationId: req.organizationId,
        slug: req.pipeline,
        configuration,
      });
      return { pipeline };
    },
  };
  return { client, asked, configurations };
}

function setup(opts: { ttlMs?: number; max?: number } = {}) {
  let clock = 0;
  const fake = fakePipelines();
  const cache = createPipelineCache(fake.client as never, {
    ttlMs: opts.ttlMs ?? 30_000,
    max: opts.max ?? 100,
    now: () => clock,
  });
  return { ...fake, cache, tick: (ms: number) => (clock += ms) };
}

describe("pipelineRules", () => {
  it("reads the build's notify, the steps only when one has notify, and the commit-status entries", () => {
    expect(pipelineRules(NOTIFYING)).toMatchObject({ buildNotify: [{ type: "email" }], steps: [] });
    const step = pipelineRules("steps:\n  - command: x\n    notify:\n      - slack: https://hooks.slack.com/x\n");
    expect(step.buildNotify).toEqual([]);
    expect(step.steps).toHaveLength(1);
    const statuses = pipelineRules("notify:\n  - github_commit_status: {context: ci/x}\nsteps:\n  - command: x\n");
    expect(statuses.commitStatuses.build.map((n) => n.context)).toEqual(["ci/x"]);
  });

  it("has no rules for an empty or unparsable YAML", () => {
    for (const yaml of ["", "steps: [", "notify: 3"]) {
      expect(pipelineRules(yaml)).toMatchObject({ buildNotify: [], steps: [], commitStatuses: { build: [] } });
    }
  });
});

describe("createPipelineCache", () => {
  it("reads a pipeline once, and concurrent misses share one RPC", async () => {
    const { cache, asked } = setup();
    const all = await Promise.all(Array.from({ length: 6 }, () => cache.get(ORG, "p-1")));
    expect(new Set(all).size).toBe(1);
    expect(all[0]?.rules.buildNotify).toHaveLength(1);
    await cache.get(ORG, "p-1");
    expect(asked).toEqual(["p-1"]);
  });

  it("reads again after the TTL, keeping the rules when the YAML did not change and reading them when it did", async () => {
    const { cache, asked, tick, configurations } = setup({ ttlMs: 1_000 });
    const first = await cache.get(ORG, "p-1");
    tick(1_000);
    const second = await cache.get(ORG, "p-1");
    expect(asked).toHaveLength(2);
    expect(second?.pipeline).not.toBe(first?.pipeline);
    expect(second?.rules).toBe(first?.rules);
    configurations.set("p-1", "steps:\n  - command: other\n");
    tick(1_000);
    const third = await cache.get(ORG, "p-1");
    expect(third?.rules).not.toBe(first?.rules);
    expect(third?.rules.buildNotify).toEqual([]);
  });

  it("keeps a pipeline that is gone as null, and does not keep other failures", async () => {
    const { cache, asked } = setup();
    expect(await cache.get(ORG, "gone")).toBeNull();
    expect(await cache.get(ORG, "gone")).toBeNull();
    await expect(cache.get(ORG, "down")).rejects.toThrow("unavailable");
    await expect(cache.get(ORG, "down")).rejects.toThrow("unavailable");
    expect(asked).toEqual(["gone", "down", "down"]);
  });

  it("asks the service again when a pipeline is asked in another organization than the kept answer's", async () => {
    const { cache, asked } = setup();
    await cache.get(ORG, "p-1");
    expect((await cache.get("o-2", "p-1"))?.pipeline.organizationId).toBe("o-2");
    expect(asked).toEqual(["p-1", "p-1"]);
  });

  it("keeps at most max pipelines", async () => {
    const { cache, asked } = setup({ max: 1 });
    await cache.get(ORG, "p-1");
    await cache.get(ORG, "p-2");
    expect(cache.size).toBe(1);
    await cache.get(ORG, "p-1");
    expect(asked).toEqual(["p-1", "p-2", "p-1"]);
  });

  it("is shared by the three handlers' reads: a burst of events on a quiet pipeline costs one RPC", async () => {
    const { cache, asked } = setup();
    const identity = { getOrganization: async () => ({ organization: { slug: "acme" } }) };
    const builds = { getBuild: async () => ({}) };
    const urls = { publicUrl: "http://api.test", webUrl: "http://web.test" };
    const payloads = createPayloads({ identity, builds, pipelines: cache, ...urls } as never);
    const notify = createNotifyHandler({ identity, builds, pipelines: cache, payloads, ...urls } as never);
    const sources = createRpcStatusSources({
      connections: { list: async () => [] },
      pipelines: cache,
      builds,
      identity,
      webBaseUrl: urls.webUrl,
    } as never);
    const build = create(BuildSchema, {
      organizationId: ORG,
      pipelineId: "p-2",
      number: 1,
      state: "scheduled",
    });
    const event = { type: "build" as const, kind: "build_created", seq: 1, build, previousState: "" };
    for (let i = 0; i < 5; i++) {
      await Promise.all([notify.intents(event), payloads.body(event, "build.scheduled"), sources.pipeline(ORG, "p-2")]);
    }
    expect(asked).toEqual(["p-2"]);
  });
});

describe("what events do to the cache (subscribePipelineEvents of @conveyor/runtime)", () => {
  /** A cache holding p-1 and p-2, and what asking both again asks of the service. */
  async function holding() {
    const world = setup();
    await world.cache.get(ORG, "p-1");
    await world.cache.get(ORG, "p-2");
    const askedAgain = async () => {
      world.asked.length = 0;
      await world.cache.get(ORG, "p-1");
      await world.cache.get(ORG, "p-2");
      return [...world.asked];
    };
    return { ...world, askedAgain };
  }

  it("drops an evicted pipeline, and only that one", async () => {
    const { cache, askedAgain } = await holding();
    cache.evict("p-1");
    expect(await askedAgain()).toEqual(["p-1"]);
  });

  it("reads a pipeline kept as gone again once evicted (one with its id was created)", async () => {
    const { cache, asked, configurations } = await holding();
    expect(await cache.get(ORG, "p-3")).toBeNull();
    configurations.set("p-3", NOTIFYING);
    cache.evict("p-3");
    asked.length = 0;
    expect((await cache.get(ORG, "p-3"))?.rules.buildNotify).toHaveLength(1);
    expect(asked).toEqual(["p-3"]);
  });

  it("puts newer build counters into the kept pipeline without dropping it, and ignores older ones", async () => {
    const { cache, askedAgain } = await holding();
    const counts = (scheduledBuilds: number) => create(PipelineCountsSchema, { scheduledBuilds });
    cache.applyCounts("p-1", counts(4), 2_000);
    cache.applyCounts("p-1", counts(1), 1_000);
    expect((await cache.get(ORG, "p-1"))?.pipeline.counts?.scheduledBuilds).toBe(4);
    expect(await askedAgain()).toEqual([]);
  });

  it("drops every pipeline when cleared", async () => {
    const { cache, askedAgain } = await holding();
    cache.clear();
    expect(cache.size).toBe(0);
    expect(await askedAgain()).toEqual(["p-1", "p-2"]);
  });
});
