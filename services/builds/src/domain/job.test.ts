import { clusterQueueIdOf, queueOf } from "./job.js";

describe("queueOf", () => {
  it("takes the queue rule's value, and default without one", () => {
    expect(queueOf(["os=linux", "queue=deploy"])).toBe("deploy");
    expect(queueOf(["os=linux"])).toBe("default");
    expect(queueOf([])).toBe("default");
  });

  it("trims, ignores rules that only look like it, and treats an empty queue as default", () => {
    expect(queueOf([" queue = big "])).toBe("big");
    expect(queueOf(["queued=x", "myqueue=y"])).toBe("default");
    expect(queueOf(["queue="])).toBe("default");
  });
});

describe("clusterQueueIdOf", () => {
  const ids = new Map([
    ["default", "q-default"],
    ["deploy", "q-deploy"],
  ]);
  const script = (...rules: string[]) => ({ type: "script" as const, agentQueryRules: rules });

  it("names the queue object of the queue the rules name, default without one", () => {
    expect(clusterQueueIdOf(script("queue=deploy", "os=linux"), ids)).toBe("q-deploy");
    expect(clusterQueueIdOf(script("os=linux"), ids)).toBe("q-default");
    expect(clusterQueueIdOf(script(), ids)).toBe("q-default");
  });

  it("names none for a queue the cluster has no object of, a queue pattern, or unread queues", () => {
    expect(clusterQueueIdOf(script("queue=other"), ids)).toBeNull();
    expect(clusterQueueIdOf(script("queue=dep*"), ids)).toBeNull();
    expect(clusterQueueIdOf(script("queue=deploy"), new Map())).toBeNull();
    expect(clusterQueueIdOf(script("queue=deploy"), null)).toBeNull();
  });

  it("names none for jobs no agent runs", () => {
    expect(clusterQueueIdOf({ type: "waiter", agentQueryRules: [] }, ids)).toBeNull();
    expect(clusterQueueIdOf({ type: "trigger", agentQueryRules: ["queue=deploy"] }, ids)).toBeNull();
  });
});
