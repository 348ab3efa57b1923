import { recogniseDelivery } from "./forge-headers.js";

describe("recogniseDelivery", () => {
  it.each([
    [{ "x-github-event": "push", "x-github-delivery": "d-1" }, "github", "push", "d-1"],
    [{ "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": "u-1" }, "gitlab", "Push Hook", "u-1"],
    [
      { "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": "u-1", "idempotency-key": "k-1" },
      "gitlab",
      "Push Hook",
      "k-1",
    ],
    [{ "x-event-key": "repo:push", "x-request-uuid": "r-1", "x-hook-uuid": "h-1" }, "bitbucket", "repo:push", "r-1"],
    [{ "x-event-key": "repo:push", "x-hook-uuid": "h-1" }, "bitbucket", "repo:push", ""],
    // Gitea sends GitHub's and Gogs's headers too: its own decide.
    [
      { "x-gitea-event": "push", "x-gitea-delivery": "g-1", "x-github-event": "push", "x-github-delivery": "g-1" },
      "gitea",
      "push",
      "g-1",
    ],
    [{ "x-forgejo-event": "push", "x-forgejo-delivery": "f-1", "x-gitea-event": "push" }, "gitea", "push", "f-1"],
    [{ "x-github-event": ["ping", "push"], "x-github-delivery": "d-2" }, "github", "ping", "d-2"],
  ] as Array<[Record<string, string | string[]>, string, string, string]>)(
    "%j is %s %s, delivery %s",
    (headers, forge, event, deliveryId) => {
      expect(recogniseDelivery(headers)).toEqual({ forge, event, deliveryId });
    },
  );

  it("refuses a request without a forge's event header, naming the headers it looks for", () => {
    const answer = recogniseDelivery({ "content-type": "application/json" });
    expect(answer).toEqual({ problem: expect.stringContaining("X-GitHub-Event, X-Gitlab-Event") });
  });

  it("refuses event names and delivery ids no forge sends", () => {
    expect(recogniseDelivery({ "x-github-event": "a".repeat(201) })).toHaveProperty("problem");
    expect(recogniseDelivery({ "x-github-event": "push", "x-github-delivery": "a\u0000b" })).toHaveProperty("problem");
  });
});
