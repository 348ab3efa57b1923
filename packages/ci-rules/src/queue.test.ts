import { DEFAULT_QUEUE, exactQueueOf, isQueuePattern, parseTags, queueOf } from "./queue.js";

describe("parseTags", () => {
  it('reads key=value tags, trimmed; a bare tag has the value "", an empty key is dropped, later tags win', () => {
    expect([...parseTags(["queue=deploy", " os = linux ", "flag", "os=mac", "=x"])]).toEqual([
      ["queue", "deploy"],
      ["os", "mac"],
      ["flag", ""],
    ]);
  });
});

describe("queueOf", () => {
  it("is the queue value, else default", () => {
    expect(queueOf(["queue=deploy"])).toBe("deploy");
    expect(queueOf(["os=linux"])).toBe(DEFAULT_QUEUE);
    expect(queueOf(["queue="])).toBe("default");
    expect(queueOf(["queue"])).toBe("default");
    expect(queueOf([])).toBe("default");
    expect(queueOf(["queue=a", "queue=b"])).toBe("b");
    expect(queueOf([" queue = deploy.eu "])).toBe("deploy.eu");
  });
});

describe("exactQueueOf", () => {
  it("names the one queue of a job's rules, default when they name none", () => {
    expect(exactQueueOf(["queue=deploy", "os=linux"])).toBe("deploy");
    expect(exactQueueOf(["os=linux"])).toBe("default");
    expect(exactQueueOf([])).toBe("default");
  });

  it("names none for a queue pattern, which several queues may match", () => {
    expect(exactQueueOf(["queue=deploy*"])).toBeNull();
    expect(exactQueueOf(["queue=*"])).toBeNull();
    expect(isQueuePattern("de*ploy")).toBe(true);
    expect(isQueuePattern("deploy")).toBe(false);
  });
});
