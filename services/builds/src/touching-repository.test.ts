import type { BuildRepository } from "./build-repository.js";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import type { Touch } from "./read-cache.js";
import { withTouches } from "./touching-repository.js";

const build = (id: string, state: string) =>
  ({ id, pipelineId: `p-${id}`, organizationId: "org", state, number: 1 }) as unknown as Build;
const job = (id: string, buildId: string) => ({ id, buildId }) as unknown as Job;
const FIRST = { state: "scheduled", blocked: false, finishedAt: null } as const;

/** The touching repository over an inner one whose writes succeed (or fail, when told), and what it published. */
function setup() {
  const touches: Touch[] = [];
  const failing = new Set<string>();
  const write = (name: string) => async () => {
    if (failing.has(name)) throw new Error(`${name} failed`);
    return true;
  };
  const inner = {
    insertBuild: write("insertBuild"),
    insertJobs: write("insertJobs"),
    leaveCreating: write("leaveCreating"),
  } as unknown as BuildRepository;
  const repo = withTouches(inner, async (t) => {
    touches.push(t);
  });
  return { repo, touches, failing };
}

describe("withTouches", () => {
  it("touches a creation once, when the build takes its first state: the build, its lists and its jobs", async () => {
    const { repo, touches } = setup();
    const b = build("b1", "creating");
    await repo.insertBuild(b);
    await repo.insertJobs([job("j1", "b1"), job("j2", "b1")]);
    expect(touches).toEqual([]);
    await repo.leaveCreating(b, FIRST);
    expect(touches).toEqual([{ builds: ["b1"], pipelines: ["p-b1"], organizations: ["org"] }]);
    // The creation is over: jobs added to the build later (a retry) touch.
    await repo.insertJobs([job("j3", "b1")]);
    expect(touches[1]).toEqual({ builds: [], pipelines: [], organizations: [], jobsOf: ["b1"] });
  });

  it("touches a build stored in any other state, and jobs of a build it is not creating", async () => {
    const { repo, touches } = setup();
    await repo.insertBuild(build("b2", "scheduled"));
    expect(touches).toEqual([{ builds: ["b2"], pipelines: ["p-b2"], organizations: ["org"] }]);
    await repo.insertBuild(build("b3", "creating"));
    await repo.insertJobs([job("j1", "b3"), job("j2", "elsewhere")]);
    expect(touches[1]).toEqual({ builds: [], pipelines: [], organizations: [], jobsOf: ["b3", "elsewhere"] });
  });

  it("touches jobs stored after their creation's jobs failed once, and a creation whose first state failed", async () => {
    const { repo, touches, failing } = setup();
    const b = build("b4", "creating");
    await repo.insertBuild(b);
    failing.add("insertJobs");
    await expect(repo.insertJobs([job("j1", "b4")])).rejects.toThrow("insertJobs failed");
    failing.delete("insertJobs");
    await repo.insertJobs([job("j1", "b4")]);
    expect(touches).toEqual([{ builds: [], pipelines: [], organizations: [], jobsOf: ["b4"] }]);

    const c = build("b5", "creating");
    await repo.insertBuild(c);
    failing.add("leaveCreating");
    await expect(repo.leaveCreating(c, FIRST)).rejects.toThrow("leaveCreating failed");
    expect(touches[1]).toEqual({ builds: ["b5"], pipelines: ["p-b5"], organizations: ["org"] });
  });

  it("does not count a build whose creating insert failed as being created (a creating build needs no touch)", async () => {
    const { repo, touches, failing } = setup();
    failing.add("insertBuild");
    await expect(repo.insertBuild(build("b6", "creating"))).rejects.toThrow("insertBuild failed");
    expect(touches).toEqual([]);
    failing.delete("insertBuild");
    await repo.insertJobs([job("j1", "b6")]);
    expect(touches).toEqual([{ builds: [], pipelines: [], organizations: [], jobsOf: ["b6"] }]);
  });
});
