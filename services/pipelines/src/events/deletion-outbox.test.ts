import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { encodeEvent, SUBJECTS } from "@conveyor/runtime";
import type { PipelineDoc } from "../store/pipelines-repository.js";
import { deletionKey, deletionResolver, UNCOMMITTED_AFTER_MS } from "./deletion-outbox.js";

const event = encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, { pipelineId: "p", organizationId: "o" });
const at = new Date("2026-01-01T00:00:00Z");
const entry = { key: deletionKey("p"), version: "v", at, event };
const later = (ms: number) => () => new Date(at.getTime() + ms);

describe("the relay's decision on a recorded pipeline deletion", () => {
  it("publishes it once the pipeline is gone", async () => {
    const resolve = deletionResolver({ find: async () => null }, later(5_000));
    expect(await resolve(entry)).toBe(event);
  });

  it("waits while the pipeline is still there (a deletion under way), then drops it as never committed", async () => {
    const repo = { find: async () => ({ _id: "p" }) as PipelineDoc };
    expect(await deletionResolver(repo, later(5_000))(entry)).toBe("wait");
    expect(await deletionResolver(repo, later(UNCOMMITTED_AFTER_MS + 1))(entry)).toBe("drop");
  });

  it("drops an entry without its event", async () => {
    const resolve = deletionResolver({ find: async () => null }, later(5_000));
    expect(await resolve({ key: deletionKey("p"), version: "v", at })).toBe("drop");
  });
});
