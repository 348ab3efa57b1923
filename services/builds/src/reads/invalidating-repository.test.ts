import { createLogger } from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import type { BuildRepository, CreationClaim } from "../store/build-repository.js";
import { createMemoryBuildRepository } from "../store/memory-build-repository.js";
import { withInvalidations } from "./invalidating-repository.js";
import type { Invalidation } from "./read-cache.js";

const build = (id: string) =>
  ({ id, pipelineId: `p-${id}`, organizationId: "org", state: "scheduled", number: 1 }) as unknown as Build;
const job = (id: string, buildId: string) => ({ id, buildId }) as unknown as Job;
const claim = (buildId: string): CreationClaim => ({
  buildId,
  pipelineId: `p-${buildId}`,
  jobIds: [],
  createdAt: new Date(),
});
const logger = createLogger("test", "silent");
const ofBuild = (id: string): Invalidation => ({ builds: [id], pipelines: [`p-${id}`], organizations: ["org"] });
const ofJobsOf = (...ids: string[]): Invalidation => ({ builds: [], pipelines: [], organizations: [], jobsOf: ids });

/** The invalidating repository over an inner one whose writes succeed (or fail, when told), and what it published. */
function setup() {
  const published: Invalidation[] = [];
  const failing = new Set<string>();
  const write = (name: string) => async () => {
    if (failing.has(name)) throw new Error(`${name} failed`);
    return true;
  };
  const inner = {
    insertClaim: write("insertClaim"),
    removeClaim: write("removeClaim"),
    insertBuild: write("insertBuild"),
    insertJobs: write("insertJobs"),
    deleteJobs: write("deleteJobs"),
  } as unknown as BuildRepository;
  const repo = withInvalidations(
    inner,
    async (t) => {
      published.push(t);
    },
    logger,
  );
  return { repo, published, failing };
}

describe("withInvalidations", () => {
  it("invalidates a creation once, when its build is stored after its jobs: the build, its lists and its jobs", async () => {
    const { repo, published } = setup();
    await repo.insertClaim(claim("b1"));
    await repo.insertJobs([job("j1", "b1"), job("j2", "b1")]);
    expect(published).toEqual([]);
    await repo.insertBuild(build("b1"));
    expect(published).toEqual([ofBuild("b1")]);
    // The creation is over: jobs added to the build later (a retry) invalidate.
    await repo.insertJobs([job("j3", "b1")]);
    expect(published[1]).toEqual(ofJobsOf("b1"));
  });

  it("invalidates a build stored without a claim, and jobs of builds not all claimed", async () => {
    const { repo, published } = setup();
    await repo.insertBuild(build("b2"));
    expect(published).toEqual([ofBuild("b2")]);
    await repo.insertClaim(claim("b3"));
    await repo.insertJobs([job("j1", "b3"), job("j2", "elsewhere")]);
    expect(published[1]).toEqual(ofJobsOf("b3", "elsewhere"));
  });

  it("forgets a claim whose jobs insert failed, whose build insert failed, or that was removed", async () => {
    const { repo, published, failing } = setup();
    await repo.insertClaim(claim("b4"));
    failing.add("insertJobs");
    await expect(repo.insertJobs([job("j1", "b4")])).rejects.toThrow("insertJobs failed");
    failing.delete("insertJobs");
    await repo.insertJobs([job("j1", "b4")]);
    expect(published).toEqual([ofJobsOf("b4")]);

    await repo.insertClaim(claim("b5"));
    failing.add("insertBuild");
    await expect(repo.insertBuild(build("b5"))).rejects.toThrow("insertBuild failed");
    // A failed write may have been applied: it published too.
    expect(published[1]).toEqual(ofBuild("b5"));
    await repo.insertJobs([job("j2", "b5")]);
    expect(published[2]).toEqual(ofJobsOf("b5"));

    await repo.insertClaim(claim("b6"));
    await repo.removeClaim("b6");
    await repo.insertJobs([job("j3", "b6")]);
    expect(published[3]).toEqual(ofJobsOf("b6"));
  });

  it("does not count a claim whose insert failed, and invalidates the jobs a repair removes", async () => {
    const { repo, published, failing } = setup();
    failing.add("insertClaim");
    await expect(repo.insertClaim(claim("b7"))).rejects.toThrow("insertClaim failed");
    expect(published).toEqual([]);
    await repo.insertJobs([job("j1", "b7")]);
    expect(published).toEqual([ofJobsOf("b7")]);
    await repo.deleteJobs("b7", ["j1"]);
    expect(published[1]).toEqual(ofJobsOf("b7"));
  });
});

describe("withInvalidations' coverage", () => {
  // A write that passes through unwrapped changes what replicas' caches keep without telling them: every method that
  // writes is wrapped, save those that change nothing a read serves (a claim is read by no cached answer).
  const NOT_CACHED = new Set(["insertClaim", "removeClaim", "insertCounterMark"]);
  it("wraps every write of the repository", () => {
    const inner = createMemoryBuildRepository();
    const repo = withInvalidations(inner, async () => {}, logger);
    const writes = Object.keys(inner).filter((name) =>
      /^(insert|update|delete|remove|add|set|mark|replace)/.test(name),
    );
    expect(writes.length).toBeGreaterThan(10);
    const unwrapped = writes.filter(
      (name) => !NOT_CACHED.has(name) && repo[name as keyof BuildRepository] === inner[name as keyof BuildRepository],
    );
    expect(unwrapped).toEqual([]);
  });
});
