import { createLogger } from "@conveyor/runtime";
import { createClusterQueueIds, QUEUE_IDS_TTL_MS } from "./cluster-queue-ids.js";

describe("createClusterQueueIds", () => {
  const logger = createLogger("test", "silent");

  it("reads a cluster's queues once per QUEUE_IDS_TTL_MS, concurrent readers sharing the read", async () => {
    let now = 0;
    let reads = 0;
    const ids = createClusterQueueIds({
      list: async () => {
        reads++;
        return [{ id: "q-1", key: "default" }];
      },
      logger,
      nowMs: () => now,
    });
    const [a, b] = await Promise.all([ids.of("o", "c"), ids.of("o", "c")]);
    expect(a?.get("default")).toBe("q-1");
    expect(b).toBe(a);
    now += QUEUE_IDS_TTL_MS - 1;
    await ids.of("o", "c");
    expect(reads).toBe(1);
    await ids.of("o", "other");
    expect(reads).toBe(2);
    now += 1;
    await ids.of("o", "c");
    expect(reads).toBe(3);
  });

  it("answers null without a cluster (nothing asked) and when the read fails, asking again after the TTL", async () => {
    let now = 0;
    let reads = 0;
    const ids = createClusterQueueIds({
      list: async () => {
        reads++;
        throw new Error("unreachable");
      },
      logger,
      nowMs: () => now,
    });
    expect(await ids.of("o", null)).toBeNull();
    expect(reads).toBe(0);
    expect(await ids.of("o", "c")).toBeNull();
    expect(await ids.of("o", "c")).toBeNull();
    expect(reads).toBe(1);
    now += QUEUE_IDS_TTL_MS;
    expect(await ids.of("o", "c")).toBeNull();
    expect(reads).toBe(2);
  });
});
