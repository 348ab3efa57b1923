import { ConfigError, defaultServiceUrl } from "@conveyor/runtime";
import { readAgentsConfig } from "./config.js";

const thrown = (env: Record<string, string>): unknown => {
  try {
    readAgentsConfig(env);
    return undefined;
  } catch (err) {
    return err;
  }
};

describe("readAgentsConfig", () => {
  it("defaults to 2 s pings, 10 s heartbeats, 1 s job status checks and a 60 s lost window", () => {
    const config = readAgentsConfig({});
    expect(config).toEqual({
      buildsUrl: defaultServiceUrl("builds"),
      pipelinesUrl: defaultServiceUrl("pipelines"),
      pingIntervalS: 2,
      heartbeatIntervalS: 10,
      jobStatusIntervalS: 1,
      lostAfterMs: 60_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every setting, trimmed, with blank values meaning the default", () => {
    expect(
      readAgentsConfig({
        BUILDS_URL: " http://builds.internal:7003/ ",
        PIPELINES_URL: "http://pipelines.internal:7002",
        AGENT_PING_INTERVAL_S: "5",
        AGENT_HEARTBEAT_INTERVAL_S: " 20 ",
        AGENT_JOB_STATUS_INTERVAL_S: "3",
        AGENT_LOST_AFTER_S: "120",
      }),
    ).toEqual({
      buildsUrl: "http://builds.internal:7003",
      pipelinesUrl: "http://pipelines.internal:7002",
      pingIntervalS: 5,
      heartbeatIntervalS: 20,
      jobStatusIntervalS: 3,
      lostAfterMs: 120_000,
    });
    expect(readAgentsConfig({ AGENT_PING_INTERVAL_S: "  ", AGENT_LOST_AFTER_S: "" })).toMatchObject({
      pingIntervalS: 2,
      lostAfterMs: 60_000,
    });
  });

  it("requires the lost window to span at least three heartbeats", () => {
    expect(readAgentsConfig({ AGENT_HEARTBEAT_INTERVAL_S: "10", AGENT_LOST_AFTER_S: "30" }).lostAfterMs).toBe(30_000);
    const err = thrown({ AGENT_HEARTBEAT_INTERVAL_S: "10", AGENT_LOST_AFTER_S: "29" });
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe("AGENT_LOST_AFTER_S must be >= 30");
    // The default heartbeat sets the floor when only the window is given.
    expect((thrown({ AGENT_LOST_AFTER_S: "29" }) as Error).message).toBe("AGENT_LOST_AFTER_S must be >= 30");
    expect(readAgentsConfig({ AGENT_HEARTBEAT_INTERVAL_S: "1", AGENT_LOST_AFTER_S: "3" }).lostAfterMs).toBe(3_000);
  });

  it("names the variable and the problem for values out of range or malformed", () => {
    const message = (env: Record<string, string>) => {
      const err = thrown(env);
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    };
    expect(message({ AGENT_PING_INTERVAL_S: "0" })).toBe("AGENT_PING_INTERVAL_S must be >= 1");
    expect(message({ AGENT_PING_INTERVAL_S: "601" })).toBe("AGENT_PING_INTERVAL_S must be <= 600");
    expect(message({ AGENT_HEARTBEAT_INTERVAL_S: "0" })).toBe("AGENT_HEARTBEAT_INTERVAL_S must be >= 1");
    expect(message({ AGENT_HEARTBEAT_INTERVAL_S: "601" })).toBe("AGENT_HEARTBEAT_INTERVAL_S must be <= 600");
    expect(message({ AGENT_JOB_STATUS_INTERVAL_S: "-1" })).toBe("AGENT_JOB_STATUS_INTERVAL_S must be >= 1");
    expect(message({ AGENT_LOST_AFTER_S: "86401" })).toBe("AGENT_LOST_AFTER_S must be <= 86400");
    expect(message({ AGENT_PING_INTERVAL_S: "1.5" })).toBe('AGENT_PING_INTERVAL_S must be an integer, got "1.5"');
    expect(message({ AGENT_LOST_AFTER_S: "1m" })).toBe('AGENT_LOST_AFTER_S must be an integer, got "1m"');
    expect(message({ BUILDS_URL: "not a url" })).toBe('BUILDS_URL must be a URL, got "not a url"');
  });
});

describe("the default lost window", () => {
  it("grows with the heartbeat interval, so it always leaves room for two missed heartbeats", () => {
    expect(readAgentsConfig({ AGENT_HEARTBEAT_INTERVAL_S: "30" }).lostAfterMs).toBe(90_000);
    expect(readAgentsConfig({ AGENT_HEARTBEAT_INTERVAL_S: "5" }).lostAfterMs).toBe(60_000);
  });
});
