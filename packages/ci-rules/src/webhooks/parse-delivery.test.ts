import { parseDelivery } from "./parse-delivery.js";

describe("parseDelivery", () => {
  it("says a body that is not JSON is not JSON", () => {
    expect(parseDelivery("github", "push", "payload=%7B%7D")).toEqual({
      kind: "invalid",
      problem: "the payload is not JSON: send deliveries with Content-Type application/json",
    });
  });

  it("hands each forge's deliveries to its parser", () => {
    const push = JSON.stringify({ ref: "refs/heads/main", after: "abc" });
    expect(parseDelivery("github", "push", push)).toMatchObject({ kind: "events", events: [{ kind: "push" }] });
    expect(parseDelivery("gitea", "push", push)).toMatchObject({ kind: "events", events: [{ kind: "push" }] });
    expect(parseDelivery("gitlab", "Push Hook", push)).toMatchObject({ kind: "events", events: [{ kind: "push" }] });
    expect(parseDelivery("bitbucket", "repo:push", push)).toEqual({
      kind: "invalid",
      problem: "push must be an object",
    });
  });
});
