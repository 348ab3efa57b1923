import { queueOf } from "./job.js";

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
