import { dispatchPausedFor, MAX_QUEUE_KEY, queueKeyProblem, registrationQueueProblem } from "./cluster-queues.js";

describe("queueKeyProblem", () => {
  it.each(["default", "linux-medium-x86", "mac_large_silicon", "deploy.eu", "A1", "x".repeat(MAX_QUEUE_KEY)])(
    "accepts %s",
    (key) => {
      expect(queueKeyProblem(key)).toBeNull();
    },
  );
  it.each([
    ["", "can't be blank"],
    ["x".repeat(MAX_QUEUE_KEY + 1), `is too long (maximum is ${MAX_QUEUE_KEY} characters)`],
    ["linux medium", "may only contain letters, digits, dots, hyphens and underscores"],
    ["queue=x", "may only contain letters, digits, dots, hyphens and underscores"],
    ["linux-*", "may only contain letters, digits, dots, hyphens and underscores"],
    ["dé", "may only contain letters, digits, dots, hyphens and underscores"],
  ])("refuses %j: %s", (key, problem) => {
    expect(queueKeyProblem(key)).toBe(problem);
  });
});

describe("registrationQueueProblem", () => {
  it("takes any queue in a cluster without queues", () => {
    expect(registrationQueueProblem("anything", [])).toBeNull();
    expect(registrationQueueProblem("", [])).toBeNull();
  });
  it("takes a queue the cluster has, and an agent without a queue tag into a queue named default", () => {
    expect(registrationQueueProblem("linux", ["default", "linux"])).toBeNull();
    expect(registrationQueueProblem("", ["default"])).toBeNull();
  });
  it("refuses a queue the cluster does not have, naming it and the cluster's queues", () => {
    expect(registrationQueueProblem("gpu", ["default", "linux"])).toBe(
      'names queue "gpu", which is not a queue of this cluster (its queues: default, linux)',
    );
    expect(registrationQueueProblem("", ["linux"])).toMatch(/^names queue "default"/);
  });
  it("lists at most ten of the cluster's queues", () => {
    const keys = Array.from({ length: 12 }, (_, i) => `q${i}`);
    expect(registrationQueueProblem("x", keys)).toMatch(/q9, …\)$/);
  });
  it("compares keys exactly (no patterns, case kept)", () => {
    expect(registrationQueueProblem("Linux", ["linux"])).not.toBeNull();
    expect(registrationQueueProblem("lin*", ["linux"])).not.toBeNull();
  });
});

describe("dispatchPausedFor", () => {
  it("is true only for an agent whose queue is paused", () => {
    const paused = new Set(["deploy"]);
    expect(dispatchPausedFor("deploy", paused)).toBe(true);
    expect(dispatchPausedFor("build", paused)).toBe(false);
    expect(dispatchPausedFor("", new Set(["default"]))).toBe(true);
    expect(dispatchPausedFor("", paused)).toBe(false);
  });
});
