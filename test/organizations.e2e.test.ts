import { request } from "node:http";
import { Role } from "@conveyor/proto/identity";
import { api, arrangeOrgUser, identity, stack, unique } from "./support/stack-env.js";

/**
 * A request announcing a body of `length` bytes and sending none: the gateway answers from the Content-Length alone
 * (a body over the limit is refused before it is read, with `Connection: close`), then the request is dropped.
 */
function announceBody(path: string, method: string, length: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${stack.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${stack.apiToken}`,
        "content-type": "application/json",
        "content-length": length,
      },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        text += d;
      });
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, text });
        req.destroy();
      });
    });
    req.on("error", reject);
    req.flushHeaders();
  });
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("organizations and members over REST", () => {
  it("lists and gets the bootstrapped organization with every field typed as documented", async () => {
    const list = await api("/v2/organizations", stack.apiToken);
    expect(list.status).toBe(200);
    expect(list.headers.get("content-type")).toMatch(/^application\/json/);
    const org = list.body.find((o: { slug: string }) => o.slug === stack.orgSlug);
    expect(org).toBeDefined();
    const one = await api(`/v2/organizations/${stack.orgSlug}`, stack.apiToken);
    expect(one.body).toEqual(org);
    expect(Object.keys(org).sort()).toEqual(
      [
        "agents_url",
        "created_at",
        "emojis_url",
        "graphql_id",
        "id",
        "name",
        "pipelines_url",
        "slug",
        "url",
        "web_url",
      ].sort(),
    );
    expect(org.id).toMatch(UUID);
    expect(org.created_at).toMatch(ISO_MS);
    expect(org.url).toBe(`${stack.apiUrl}/v2/organizations/${stack.orgSlug}`);
    expect(org.pipelines_url).toBe(`${org.url}/pipelines`);
  });

  it("pages members with a Link header go-buildkite can follow", async () => {
    const { organization, secret } = await arrangeOrgUser({ scopes: ["read_organizations"], role: Role.ADMIN });
    for (let i = 0; i < 4; i++) {
      const { user } = await identity.createUser({ name: unique("Member"), email: `${unique("m")}@example.com` });
      await identity.addMember({ organization: organization.slug, userId: user?.id ?? "" });
    }
    const page1 = await api(`/v2/organizations/${organization.slug}/members?per_page=2`, secret);
    expect(page1.status).toBe(200);
    expect(page1.body).toHaveLength(2);
    const link = page1.headers.get("link") ?? "";
    expect(link).toContain(
      `<${stack.apiUrl}/v2/organizations/${organization.slug}/members?per_page=2&page=2>; rel="next"`,
    );
    expect(link).toContain('page=3>; rel="last"');
    const page3 = await api(`/v2/organizations/${organization.slug}/members?per_page=2&page=3`, secret);
    expect(page3.body).toHaveLength(1);
    expect(page3.headers.get("link")).not.toContain('rel="next"');
    const all = await api(`/v2/organizations/${organization.slug}/members`, secret);
    expect(all.body).toHaveLength(5);
    expect(all.headers.get("link")).toBeNull();
    for (const m of all.body) expect(Object.keys(m).sort()).toEqual(["email", "id", "name"]);
    const one = await api(`/v2/organizations/${organization.slug}/members/${all.body[0].id}`, secret);
    expect(one.body).toEqual(all.body[0]);
  });

  it("hides other organizations and foreign members as 404", async () => {
    const mine = await arrangeOrgUser({ scopes: ["read_organizations"] });
    const theirs = await arrangeOrgUser({ scopes: ["read_organizations"] });
    const res = await api(`/v2/organizations/${theirs.organization.slug}`, mine.secret);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: "No organization found" });
    const member = await api(`/v2/organizations/${mine.organization.slug}/members/${theirs.user.id}`, mine.secret);
    expect(member.status).toBe(404);
    const list = await api("/v2/organizations", mine.secret);
    expect(list.body.map((o: { slug: string }) => o.slug)).toEqual([mine.organization.slug]);
  });

  it("limits a token to its organization allow-list", async () => {
    const a = await arrangeOrgUser({ scopes: ["read_organizations"] });
    const { organization: b } = await identity.createOrganization({ name: unique("Org B") });
    await identity.addMember({ organization: b?.id ?? "", userId: a.user.id });
    const narrow = await identity.createAccessToken({
      userId: a.user.id,
      scopes: ["read_organizations"],
      organizations: [b?.slug ?? ""],
    });
    expect((await api(`/v2/organizations/${a.organization.slug}`, narrow.secret)).status).toBe(404);
    expect((await api(`/v2/organizations/${b?.slug}`, narrow.secret)).status).toBe(200);
    expect((await api("/v2/organizations", a.secret)).body).toHaveLength(2);
  });

  it("answers 401, 403 and revocation as Buildkite does", async () => {
    const noAuth = await api("/v2/organizations");
    expect(noAuth.status).toBe(401);
    expect(noAuth.body.message).toMatch(/^Authentication required/);
    expect((await api("/v2/organizations", "bkua_not_a_real_token")).status).toBe(401);

    const scoped = await arrangeOrgUser({ scopes: ["read_builds"] });
    const forbidden = await api(`/v2/organizations/${scoped.organization.slug}`, scoped.secret);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ message: "Your access token doesn't have the read_organizations scope" });

    const token = await api("/v2/access-token", scoped.secret);
    expect(token.body).toMatchObject({ uuid: scoped.token.id, scopes: ["read_builds"] });

    await identity.revokeAccessToken({ secret: scoped.secret });
    // Revocation reaches the gateway as an event; the cache TTL bounds the wait if the event were lost.
    let status = 0;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await api("/v2/access-token", scoped.secret)).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(401);
  });

  it("answers bad requests with clean 4xx JSON and never a 5xx", async () => {
    const cases: Array<[string, RequestInit, number]> = [
      ["/v2/organizations?page=abc", {}, 400],
      ["/v2/organizations?per_page=-1", {}, 400],
      ["/v2/no-such-route", {}, 404],
      ["/v2/access-token", { method: "DELETE", headers: { "content-type": "application/json" }, body: "{oops" }, 400],
      ["/v2/access-token", { method: "DELETE", headers: { "content-type": "application/xml" }, body: "<a/>" }, 415],
    ];
    for (const [path, init, status] of cases) {
      const res = await api(path, stack.apiToken, init);
      expect([path, res.status]).toEqual([path, status]);
      expect(typeof res.body.message).toBe("string");
    }
    // A body over the limit is answered 413 as soon as its Content-Length shows it, before it is read (sending it
    // with fetch races the early answer and the closed connection: EPIPE now and then).
    const tooLarge = await announceBody("/v2/access-token", "DELETE", 3_000_000);
    expect(tooLarge.status).toBe(413);
    expect(typeof JSON.parse(tooLarge.text).message).toBe("string");
    // The bootstrap token survived every malformed DELETE.
    expect((await api("/v2/access-token", stack.apiToken)).status).toBe(200);
  });
});
