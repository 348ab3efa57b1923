import { agentQueue, mayTake } from "./stream-queue.js";

describe("stream queues", () => {
  it("takes an agent's queue tag, default without one", () => {
    expect(agentQueue(["queue=linux", "os=x"])).toBe("linux");
    expect(agentQueue(["os=x"])).toBe("default");
  });
  it("matches a job's queue rule exactly, any queue for a pattern, default without one", () => {
    expect(mayTake("linux", ["queue=linux"])).toBe(true);
    expect(mayTake("linux", ["queue=mac"])).toBe(false);
    expect(mayTake("linux", ["queue=lin*"])).toBe(true);
    expect(mayTake("default", ["os=x"])).toBe(true);
    expect(mayTake("linux", [])).toBe(false);
  });
});
