import { consumerNames } from "./event-consumer.js";

describe("consumerNames", () => {
  it("are the usual names for the usual database, and a deployment's own for another", () => {
    expect(consumerNames("conveyor_notifications")).toEqual({
      builds: "notifications-builds",
      agents: "notifications-agents",
    });
    expect(consumerNames("notify.test*1")).toEqual({
      builds: "notifications-notify_test_1-builds",
      agents: "notifications-notify_test_1-agents",
    });
  });
});
