import { compileRules, matchesRules, parseTags, queueOf, rulesMatch, tagsProblem } from "./agent-tags.js";

const agent = (...tags: string[]) => parseTags(tags);

describe("parseTags and queueOf", () => {
  it("reads key=value tags, trims them, and lets later tags win", () => {
    expect([...parseTags(["queue=deploy", " os = linux ", "flag", "os=mac", "=x"])]).toEqual([
      ["queue", "deploy"],
      ["os", "mac"],
      ["flag", ""],
    ]);
  });

  it("finds the queue, default without one", () => {
    expect(queueOf(["queue=deploy"])).toBe("deploy");
    expect(queueOf(["os=linux"])).toBe("default");
    expect(queueOf(["queue="])).toBe("default");
    expect(queueOf([])).toBe("default");
  });
});

describe("rulesMatch", () => {
  it("puts jobs without a queue rule in the default queue only", () => {
    expect(rulesMatch([], agent())).toBe(true);
    expect(rulesMatch([], agent("queue=default"))).toBe(true);
    expect(rulesMatch([], agent("queue=deploy"))).toBe(false);
    expect(rulesMatch(["queue=default"], agent())).toBe(true);
  });

  it("requires the named queue", () => {
    expect(rulesMatch(["queue=deploy"], agent("queue=deploy"))).toBe(true);
    expect(rulesMatch(["queue=deploy"], agent("queue=default"))).toBe(false);
    expect(rulesMatch(["queue=deploy"], agent())).toBe(false);
  });

  it("requires every other rule's tag with a matching value", () => {
    const box = agent("queue=default", "os=linux", "arch=amd64");
    expect(rulesMatch(["os=linux"], box)).toBe(true);
    expect(rulesMatch(["os=linux", "arch=amd64"], box)).toBe(true);
    expect(rulesMatch(["os=linux", "arch=arm64"], box)).toBe(false);
    expect(rulesMatch(["gpu=true"], box)).toBe(false);
  });

  it("lets * match any value, or part of one", () => {
    const box = agent("os=linux-arm64", "queue=build-2");
    expect(rulesMatch(["os=*", "queue=build-*"], box)).toBe(true);
    expect(rulesMatch(["os=linux*", "queue=*"], box)).toBe(true);
    expect(rulesMatch(["os=mac*", "queue=*"], box)).toBe(false);
    expect(rulesMatch(["gpu=*", "queue=*"], box)).toBe(false);
  });

  it("is not slowed by patterns that stall backtracking regexes", () => {
    const started = Date.now();
    expect(rulesMatch([`os=${"*a".repeat(100)}*b`], agent(`os=${"a".repeat(1000)}`))).toBe(false);
    expect(Date.now() - started).toBeLessThan(200);
  });
});

describe("compileRules", () => {
  it("names the exact queue of the rules (default without one), or none when the queue is a pattern", () => {
    expect(compileRules([]).queue).toBe("default");
    expect(compileRules(["queue="]).queue).toBe("default");
    expect(compileRules(["queue=mac", "os=macos"]).queue).toBe("mac");
    expect(compileRules(["queue=linux*"]).queue).toBeNull();
    expect(compileRules(["os=linux", "queue=a", "queue=b"]).queue).toBe("b");
  });

  it("matches as the rules do, compiled once for many agents", () => {
    const rules = compileRules(["queue=linux*", "os=*", "arch=arm64"]);
    expect(matchesRules(rules, agent("queue=linux-arm", "os=debian", "arch=arm64"))).toBe(true);
    expect(matchesRules(rules, agent("queue=linux-arm", "arch=arm64"))).toBe(false);
    expect(matchesRules(rules, agent("queue=mac", "os=macos", "arch=arm64"))).toBe(false);
    expect(matchesRules(compileRules(["os"]), agent("os"))).toBe(true);
    expect(matchesRules(compileRules(["os"]), agent("os=linux"))).toBe(false);
  });
});

describe("tagsProblem", () => {
  it("bounds the count and size of tags and refuses control characters", () => {
    expect(tagsProblem(["queue=default", "os=linux"])).toBeNull();
    expect(tagsProblem(Array.from({ length: 101 }, (_, i) => `t${i}=1`))).toMatch(/at most 100/);
    expect(tagsProblem([`x=${"a".repeat(1100)}`])).toMatch(/1024/);
    expect(tagsProblem(["x=a\u0000b"])).toMatch(/control/);
  });
});
