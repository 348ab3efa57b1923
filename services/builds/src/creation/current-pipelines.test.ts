import { create } from "@bufbuild/protobuf";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { createLogger, pipelineFence } from "@conveyor/runtime";
import { createCurrentPipelines } from "./current-pipelines.js";

const logger = createLogger("test", "silent");
const pipelineAt = (version: number, extra: { name?: string; archivedAt?: undefined } = {}) =>
  create(PipelineSchema, { id: "p1", organizationId: "org", slug: "app", version, ...extra });

/** Current pipelines over a fake pipelines service (holding `held`) and fences (at `fence`), counting the reads. */
function setup(fence: number | Error, held: Pipeline | null) {
  const reads: string[] = [];
  const state = { fence, held };
  const pipelines = createCurrentPipelines({
    read: async (organizationId, id) => {
      reads.push(`${organizationId}/${id}`);
      return state.held && state.held.organizationId === organizationId ? state.held : null;
    },
    fences: {
      read: async (key) => {
        expect(key).toBe(pipelineFence("p1"));
        if (state.fence instanceof Error) throw state.fence;
        return state.fence;
      },
    },
    logger,
  });
  return { pipelines, reads, state };
}

describe("current pipelines", () => {
  it("uses the caller's copy while its fence shows it current, and reads the pipeline otherwise", async () => {
    const { pipelines, reads } = setup(3, pipelineAt(4, { name: "now" }));
    expect((await pipelines.current(pipelineAt(3)))?.version).toBe(3);
    expect(reads).toEqual([]);
    const { pipelines: stale, reads: staleReads } = setup(4, pipelineAt(4, { name: "now" }));
    expect((await stale.current(pipelineAt(3)))?.name).toBe("now");
    expect(staleReads).toEqual(["org/p1"]);
  });

  it("answers a pipeline named by id from the copy it keeps, until the fence passes it", async () => {
    const { pipelines, reads, state } = setup(2, pipelineAt(2));
    expect((await pipelines.byId("org", "p1"))?.version).toBe(2);
    expect((await pipelines.byId("org", "p1"))?.version).toBe(2);
    expect(reads).toEqual(["org/p1"]);
    // A change raised the fence: the next create reads the pipeline as it is now, and keeps that.
    state.fence = 3;
    state.held = pipelineAt(3, { archivedAt: undefined, name: "renamed" });
    expect((await pipelines.byId("org", "p1"))?.name).toBe("renamed");
    expect((await pipelines.byId("org", "p1"))?.name).toBe("renamed");
    expect(reads).toEqual(["org/p1", "org/p1"]);
  });

  it("keeps the caller's current copy for later creates by id, and never an older one over a newer", async () => {
    const { pipelines, reads } = setup(5, pipelineAt(5));
    await pipelines.current(pipelineAt(6, { name: "six" }));
    await pipelines.current(pipelineAt(5, { name: "five" }));
    expect((await pipelines.byId("org", "p1"))?.name).toBe("six");
    expect(reads).toEqual([]);
  });

  it("reads again when the fence cannot be read, and answers null for another organization's or a deleted one", async () => {
    const { pipelines, reads, state } = setup(new Error("NATS down"), pipelineAt(1));
    expect((await pipelines.byId("org", "p1"))?.version).toBe(1);
    expect((await pipelines.byId("org", "p1"))?.version).toBe(1);
    expect(reads).toHaveLength(2);
    state.fence = 1;
    expect(await pipelines.byId("other", "p1")).toBeNull();
    state.held = null;
    state.fence = 2;
    expect(await pipelines.byId("org", "p1")).toBeNull();
    expect(await pipelines.current(pipelineAt(1))).toBeNull();
  });

  it("without a pipelines service, takes the caller's copy as current and knows no pipeline by id", async () => {
    const pipelines = createCurrentPipelines({ logger });
    const copy = pipelineAt(1);
    expect(await pipelines.current(copy)).toBe(copy);
    expect(await pipelines.byId("org", "p1")).toBeNull();
  });
});
