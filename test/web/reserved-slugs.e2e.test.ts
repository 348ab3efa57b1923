import { Code, ConnectError } from "@connectrpc/connect";
import { buildTestApp } from "../../services/gateway/src/testing/test-app.js";
import { RESERVED_ORGANIZATION_SLUGS, slugProblem } from "../../services/identity/src/domain/slug.js";
import { identity, unique } from "../support/stack-env.js";

// An organization's page is /{slug} (docs/pages.md#pages): no organization may take a slug that is the first path
// segment of a gateway route, or that route would shadow its pages (its web_url would open the sign-in page, an
// asset or an API). Identity's reserved list must cover every such segment the gateway serves, and identity must
// refuse them.

describe("reserved organization slugs", () => {
  it("cover the first path segment of every route the gateway serves that could be a slug", async () => {
    const { app, routes } = await buildTestApp(
      { orgs: [], users: [], tokens: new Map(), revoked: [] },
      {},
      { proxy: true },
    );
    try {
      const segments = new Set(
        routes
          .map((r) => r.url.split("/")[1] ?? "")
          // A segment that is no valid slug (`agentedge.v1.AgentEdgeService`, a parameter) cannot be taken anyway.
          .filter((segment) => slugProblem(segment) === undefined),
      );
      expect([...segments]).toEqual(expect.arrayContaining(["v2", "v3", "login", "assets", "badges", "organizations"]));
      expect([...segments].filter((s) => !RESERVED_ORGANIZATION_SLUGS.has(s))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("are refused by identity when an organization is created with one", async () => {
    for (const slug of ["login", "v2", "badges", "organizations"]) {
      const err = await identity.createOrganization({ name: unique("Org"), slug }).catch((e: unknown) => e);
      expect([slug, err instanceof ConnectError && err.code]).toEqual([slug, Code.InvalidArgument]);
      expect(String((err as Error).message)).toContain("slug is reserved");
    }
  });
});
