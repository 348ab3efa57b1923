import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DispatchableJobSchema, JobSchema } from "@conveyor/proto/builds";
import { createDispatchHints } from "./dispatch-hints.js";

const ORG = "org-1";
const listed = (id: string, extra: { clusterId?: string; priority?: number; runnableAt?: number } = {}) =>
  create(DispatchableJobSchema, {
    id,
    organizationId: ORG,
    clusterId: extra.clusterId ?? "c1",
    priority: extra.priority ?? 0,
    ...(extra.runnableAt === undefined ? {} : { runnableAt: timestampFromDate(new Date(extra.runnableAt)) }),
  });
const changed = (id: string, state: string, type = "script") =>
  create(JobSchema, { id, organizationId: ORG, clusterId: "c1", state, type });
const asking = (clusterId: string | null = "c1") => ({
  organizationId: ORG,
  clusterId,
  tags: new Map<string, string>(),
});
const ids = (hints: ReturnType<typeof createDispatchHints>, clusterId: string | null = "c1", limit = 10) =>
  hints.candidates(asking(clusterId), limit).map((j) => j.id);

describe("dispatch hints", () => {
  it("follows job events: a scheduled script job waits, any other state or type forgets it", () => {
    const hints = createDispatchHints();
    hints.jobChanged(changed("a", "scheduled"));
    hints.jobChanged(changed("b", "scheduled"));
    hints.jobChanged(changed("m", "scheduled", "manual"));
    expect(ids(hints)).toEqual(["a", "b"]);
    hints.jobChanged(changed("a", "assigned"));
    expect(ids(hints)).toEqual(["b"]);
    hints.jobChanged(changed("a", "scheduled")); // unassigned: waiting again
    hints.jobChanged(changed("b", "canceled"));
    expect(ids(hints)).toEqual(["a"]);
    expect(hints.size).toBe(1);
  });

  it("keeps each job once, in the scope of its latest event", () => {
    const hints = createDispatchHints();
    hints.jobChanged(changed("a", "scheduled"));
    hints.jobChanged(
      create(JobSchema, { id: "a", organizationId: ORG, clusterId: "", state: "scheduled", type: "script" }),
    );
    expect(hints.size).toBe(1);
    expect(ids(hints)).toEqual([]);
    expect(ids(hints, null)).toEqual(["a"]);
  });

  it("replaces everything with a complete list, and merges a truncated one", () => {
    const hints = createDispatchHints();
    hints.jobChanged(
      create(JobSchema, {
        ...changed("event-only", "scheduled"),
        runnableAt: timestampFromDate(new Date(10)),
      }),
    );
    hints.replace([listed("x", { priority: 1 }), listed("y", { runnableAt: 5 }), listed("z", { runnableAt: 1 })], true);
    expect(ids(hints)).toEqual(["x", "z", "y", "event-only"]);
    hints.replace([listed("x"), listed("w", { clusterId: "" })], false);
    expect(ids(hints)).toEqual(["x"]);
    expect(ids(hints, null)).toEqual(["w"]);
    expect(hints.size).toBe(2);
  });

  it("keeps on a complete refresh the jobs heard of after the list was asked for", () => {
    const hints = createDispatchHints();
    hints.jobChanged(changed("old", "scheduled"));
    const since = hints.ticket();
    // While the list is being read, a new job is announced: the list cannot hold it.
    hints.jobChanged(changed("new", "scheduled"));
    hints.replace([listed("listed")], false, since);
    expect(ids(hints).sort()).toEqual(["listed", "new"]);
    // Heard of before the next ticket and not listed: gone.
    hints.replace([listed("listed")], false, hints.ticket());
    expect(ids(hints)).toEqual(["listed"]);
  });

  it("forgets a removed job and answers an unknown scope with nothing", () => {
    const hints = createDispatchHints();
    hints.replace([listed("x"), listed("y")], false);
    hints.remove("x");
    hints.remove("never-known");
    expect(ids(hints)).toEqual(["y"]);
    expect(ids(hints, "c2")).toEqual([]);
    expect(hints.candidates({ ...asking(), organizationId: "other" }, 10)).toEqual([]);
    expect(ids(hints, "c1", 0)).toEqual([]);
  });

  it("offers an agent only jobs of its own queue, and those whose queue is a pattern it matches", () => {
    const hints = createDispatchHints();
    const job = (id: string, rules: string[], priority = 0) =>
      create(JobSchema, { ...changed(id, "scheduled"), agentQueryRules: rules, priority });
    hints.jobChanged(job("plain", []));
    hints.jobChanged(job("named-default", ["queue=default"], 1));
    hints.jobChanged(job("mac", ["queue=mac", "os=macos"]));
    hints.jobChanged(job("linux-any", ["queue=linux*"], 2));
    hints.jobChanged(job("arm", ["queue=linux-arm", "arch=arm64"]));
    const of = (tags: Record<string, string>) =>
      hints
        .candidates({ organizationId: ORG, clusterId: "c1", tags: new Map(Object.entries(tags)) }, 10)
        .map((j) => j.id);
    expect(of({})).toEqual(["named-default", "plain"]);
    expect(of({ queue: "" })).toEqual(["named-default", "plain"]);
    expect(of({ queue: "mac" })).toEqual([]);
    expect(of({ queue: "mac", os: "macos" })).toEqual(["mac"]);
    expect(of({ queue: "linux-arm" })).toEqual(["linux-any"]);
    expect(of({ queue: "linux-arm", arch: "arm64" })).toEqual(["linux-any", "arm"]);
    expect(hints.size).toBe(5);

    // A job whose rules change moves to its new queue; forgotten jobs leave theirs.
    hints.jobChanged(job("mac", ["queue=linux-arm", "arch=*"]));
    expect(of({ queue: "mac", os: "macos" })).toEqual([]);
    expect(of({ queue: "linux-arm", arch: "arm64" })).toEqual(["linux-any", "arm", "mac"]);
    for (const id of ["plain", "named-default", "mac", "linux-any", "arm"]) hints.jobChanged(changed(id, "running"));
    expect(hints.size).toBe(0);
    expect(of({})).toEqual([]);
    expect(of({ queue: "linux-arm", arch: "arm64" })).toEqual([]);
  });
});
