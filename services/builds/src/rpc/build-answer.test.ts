import { aBuild, aJob } from "../test-support.js";
import { NO_JOBS, pageVersion, showBuild } from "./build-answer.js";

const build = aBuild({ id: "b1", pipelineId: "p1", number: 1 });
const job = aJob({ id: "j1", buildId: "b1", state: "scheduled" });
const retried = aJob({ id: "j0", buildId: "b1", retried: true, retriedInJobId: "j1" });

describe("shown builds", () => {
  it("names equal content with equal versions, however it was read", () => {
    const a = showBuild(build, [job], false);
    const b = showBuild({ ...build }, [{ ...job }], false);
    expect(b.version).toBe(a.version);
    expect(a.version).toMatch(/^[\w-]{22}$/);
    expect(b.message).toEqual(a.message);
  });

  it("names any change of the build or its jobs with another version", () => {
    const base = showBuild(build, [job], false).version;
    expect(showBuild({ ...build, state: "running" }, [job], false).version).not.toBe(base);
    expect(showBuild(build, [{ ...job, state: "assigned" }], false).version).not.toBe(base);
    expect(showBuild(build, [{ ...job, env: { A: "1" } }], false).version).not.toBe(base);
    expect(showBuild(build, NO_JOBS, false).version).not.toBe(base);
  });

  it("shows retried attempts only when asked, each way its own version", () => {
    const current = showBuild(build, [retried, job], false);
    const all = showBuild(build, [retried, job], true);
    expect(current.message.jobs.map((j) => j.id)).toEqual(["j1"]);
    expect(all.message.jobs.map((j) => j.id)).toEqual(["j0", "j1"]);
    expect(all.version).not.toBe(current.version);
    expect(current.version).toBe(showBuild(build, [job], false).version);
  });

  it("converts and encodes a kept build once: the same objects give the same answer object", () => {
    const jobs = [job];
    const first = showBuild(build, jobs, false);
    expect(showBuild(build, jobs, false)).toBe(first);
    expect(showBuild(build, [job], false)).not.toBe(first);
  });

  it("names a page by its builds' versions in order and whether another page follows", () => {
    const v = pageVersion(["a", "b"], false);
    expect(pageVersion(["a", "b"], false)).toBe(v);
    expect(pageVersion(["b", "a"], false)).not.toBe(v);
    expect(pageVersion(["a", "b"], true)).not.toBe(v);
    expect(pageVersion(["a,b"], false)).not.toBe(v);
  });
});
