import { aBuild, aJob } from "../test-support.js";
import { buildAnswer, NO_JOBS, pageVersion } from "./build-answer.js";

const build = aBuild({ id: "b1", pipelineId: "p1", number: 1 });
const job = aJob({ id: "j1", buildId: "b1", state: "scheduled" });
const retried = aJob({ id: "j0", buildId: "b1", retried: true, retriedInJobId: "j1" });

describe("build answers", () => {
  it("names equal content with equal versions, however it was read", () => {
    const a = buildAnswer(build, [job], false);
    const b = buildAnswer({ ...build }, [{ ...job }], false);
    expect(b.version).toBe(a.version);
    expect(a.version).toMatch(/^[\w-]{22}$/);
    expect(b.message).toEqual(a.message);
  });

  it("names any change of the build or its jobs with another version", () => {
    const base = buildAnswer(build, [job], false).version;
    expect(buildAnswer({ ...build, state: "running" }, [job], false).version).not.toBe(base);
    expect(buildAnswer(build, [{ ...job, state: "assigned" }], false).version).not.toBe(base);
    expect(buildAnswer(build, [{ ...job, env: { A: "1" } }], false).version).not.toBe(base);
    expect(buildAnswer(build, NO_JOBS, false).version).not.toBe(base);
  });

  it("shows retried attempts only when asked, each way its own version", () => {
    const current = buildAnswer(build, [retried, job], false);
    const all = buildAnswer(build, [retried, job], true);
    expect(current.message.jobs.map((j) => j.id)).toEqual(["j1"]);
    expect(all.message.jobs.map((j) => j.id)).toEqual(["j0", "j1"]);
    expect(all.version).not.toBe(current.version);
    expect(current.version).toBe(buildAnswer(build, [job], false).version);
  });

  it("converts and encodes a kept build once: the same objects give the same answer object", () => {
    const jobs = [job];
    const first = buildAnswer(build, jobs, false);
    expect(buildAnswer(build, jobs, false)).toBe(first);
    expect(buildAnswer(build, [job], false)).not.toBe(first);
  });

  it("names a page by its builds' versions in order and whether another page follows", () => {
    const v = pageVersion(["a", "b"], false);
    expect(pageVersion(["a", "b"], false)).toBe(v);
    expect(pageVersion(["b", "a"], false)).not.toBe(v);
    expect(pageVersion(["a", "b"], true)).not.toBe(v);
    expect(pageVersion(["a,b"], false)).not.toBe(v);
  });
});
