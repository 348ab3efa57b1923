import { aBuild, api, pagesWorld, web } from "../../testing/pages-world.js";
import { badgeSvg } from "./badge-svg.js";

describe("GET /badges/{token}.svg", () => {
  it("shows the state of the default branch's latest build, public and cacheable, with nothing else of the pipeline", async () => {
    const world = await pagesWorld({
      builds: [
        aBuild(web, 1, { state: "passed", branch: "main" }),
        aBuild(web, 2, { state: "failed", branch: "topic" }),
        aBuild(web, 3, { state: "running", branch: "topic" }),
      ],
    });
    try {
      const res = await world.as(null, { url: `/badges/${web.badgeToken}.svg` });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("image/svg+xml; charset=utf-8");
      expect(res.headers["cache-control"]).toBe("public, max-age=30");
      expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
      expect(res.body).toBe(badgeSvg("passing"));
      expect(res.body).not.toContain(web.name.slice(0, 3));
      expect(res.headers["set-cookie"]).toBeUndefined();
      // Another branch on request.
      expect((await world.as(null, { url: `/badges/${web.badgeToken}.svg?branch=topic` })).body).toBe(
        badgeSvg("running"),
      );
    } finally {
      await world.app.close();
    }
  });

  it("answers 304 to the current ETag", async () => {
    const world = await pagesWorld();
    try {
      const first = await world.as(null, { url: `/badges/${web.badgeToken}.svg` });
      const again = await world.as(null, {
        url: `/badges/${web.badgeToken}.svg`,
        headers: { "if-none-match": String(first.headers.etag) },
      });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe("");
    } finally {
      await world.app.close();
    }
  });

  it("says unknown for a pipeline without builds on the branch, and for a failing one, failing", async () => {
    const world = await pagesWorld({ builds: [aBuild(api, 1, { state: "failed", branch: "x" })] });
    try {
      // api has no default branch: its latest build of any branch.
      expect((await world.as(null, { url: `/badges/${api.badgeToken}.svg` })).body).toBe(badgeSvg("failing"));
      expect((await world.as(null, { url: `/badges/${web.badgeToken}.svg` })).body).toBe(badgeSvg("unknown"));
    } finally {
      await world.app.close();
    }
  });

  it("answers an unknown token, or a malformed name, 404 with the unknown badge", async () => {
    const world = await pagesWorld();
    try {
      for (const url of ["/badges/nope.svg", `/badges/${web.badgeToken}.png`, `/badges/${web.badgeToken}`]) {
        const res = await world.as(null, { url });
        expect([url, res.statusCode, res.headers["content-type"]]).toEqual([url, 404, "image/svg+xml; charset=utf-8"]);
        expect(res.body).toBe(badgeSvg("unknown"));
      }
    } finally {
      await world.app.close();
    }
  });

  it("looks a token up once a minute at most, however often the badge is fetched", async () => {
    const world = await pagesWorld();
    try {
      for (let i = 0; i < 5; i++) await world.as(null, { url: `/badges/${web.badgeToken}.svg` });
      expect(world.calls.badgeLookups).toBe(1);
    } finally {
      await world.app.close();
    }
  });
});
