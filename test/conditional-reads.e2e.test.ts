import { randomBytes } from "node:crypto";
import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeOrgUser, builds, send, stack, unique } from "./support/stack-env.js";

// Builds and pages the gateway sends again from what it rendered (its answer cache, answer-cache/answer-cache.ts),
// confirmed by the builds service's content versions: the same answer keeps its ETag, If-None-Match gets 304, and
// every change — of the build, its jobs, the page's membership, the embedded pipeline — is in the very next answer.

const SCOPES = ["read_builds", "write_builds", "read_pipelines", "write_pipelines"];
const YAML = "steps:\n  - label: one\n    command: run\n  - wait\n  - label: two\n    command: run\n";

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let slug: string;
let builds0: string;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const name = unique("Cond");
  const res = await send("POST", `/v2/organizations/${org.organization.slug}/pipelines`, org.secret, {
    name,
    repository: "git@github.com:acme/web.git",
    cluster_id: clusterId,
    configuration: YAML,
  });
  expect(res.status).toBe(201);
  slug = res.body.slug;
  builds0 = `/v2/organizations/${org.organization.slug}/pipelines/${slug}/builds`;
});

// Plain JSON unless a test asks for gzip (Node's fetch would ask for it and decode it unseen).
const get = (path: string, etag?: string, encoding = "identity") =>
  api(path, org.secret, { headers: { "accept-encoding": encoding, ...(etag ? { "if-none-match": etag } : {}) } });

// A new build's pipeline counts (scheduled, running) reach the embedded pipeline a moment after the create answers,
// and that changes the answer too: read until two answers in a row agree, then the answer holds.
async function settled(path: string, encoding = "identity") {
  let last = await get(path, undefined, encoding);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const next = await get(path, undefined, encoding);
    if (next.headers.get("etag") === last.headers.get("etag")) return next;
    last = next;
  }
  throw new Error(`${path} kept changing for 5 s`);
}

async function create() {
  const res = await send("POST", builds0, org.secret, { commit: randomBytes(20).toString("hex"), branch: "main" });
  expect(res.status).toBe(201);
  return res.body as { number: number; jobs: { id: string }[] };
}

describe("conditional build reads", () => {
  it.each(["identity", "gzip"])(
    "sends a build again under its ETag, 304 to If-None-Match, and every change at once (%s)",
    async (encoding) => {
      const build = await create();
      const path = `${builds0}/${build.number}`;
      const first = await settled(path, encoding);
      expect(first.status).toBe(200);
      const etag = first.headers.get("etag") ?? "";
      expect(etag).toMatch(encoding === "gzip" ? /^W\/"[\w-]{22}"$/ : /^"[\w-]{22}"$/);
      expect(first.headers.get("content-encoding")).toBe(encoding === "gzip" ? "gzip" : null);
      const again = await get(path, undefined, encoding);
      expect(again.text).toBe(first.text);
      expect(again.headers.get("etag")).toBe(etag);
      const held = await get(path, etag, encoding);
      expect(held.status).toBe(304);
      expect(held.text).toBe("");

      // A job assigned (as the agents service does): the next answer shows it, under another tag.
      const jobId = build.jobs[0]?.id ?? "";
      await builds.assignJob({ jobId, agent: { id: "agent", name: "agent", hostname: "h", metaData: [] } });
      const assigned = await get(path, etag, encoding);
      expect(assigned.status).toBe(200);
      expect(assigned.body.jobs[0].state).toBe("assigned");
      const etag2 = assigned.headers.get("etag") ?? "";
      expect(etag2).not.toBe(etag);

      // Canceled through the API: seen in the next read.
      const cancel = await send("PUT", `${path}/cancel`, org.secret);
      expect(cancel.status).toBe(200);
      const canceled = await get(path, etag2, encoding);
      expect(canceled.status).toBe(200);
      expect(canceled.body.state).toBe(cancel.body.state);
      expect(canceled.headers.get("etag")).not.toBe(etag2);
    },
  );

  it.each(["identity", "gzip"])(
    "sends a page again while it holds, and a new build or a pipeline change in the next answer (%s)",
    async (encoding) => {
      await create();
      const pages = [builds0, `/v2/organizations/${org.organization.slug}/builds`];
      for (const path of pages) {
        const first = await settled(`${path}?per_page=2`, encoding);
        expect(first.status).toBe(200);
        const etag = first.headers.get("etag") ?? "";
        expect((await get(`${path}?per_page=2`, etag, encoding)).status).toBe(304);
        // Another query, another answer.
        expect((await get(`${path}?per_page=1`, etag, encoding)).status).toBe(200);
      }

      const before = await Promise.all(pages.map((p) => settled(p, encoding)));
      const added = await create();
      for (const [i, path] of pages.entries()) {
        const res = await get(path, before[i]?.headers.get("etag") ?? "", encoding);
        expect(res.status).toBe(200);
        expect(res.body[0].number).toBe(added.number);
      }

      // The pipeline embedded in every build changes: the builds did not, the answers do.
      const held = await Promise.all(pages.map((p) => settled(p, encoding)));
      const description = unique("described");
      const patched = await send("PATCH", `/v2/organizations/${org.organization.slug}/pipelines/${slug}`, org.secret, {
        description,
      });
      expect(patched.status).toBe(200);
      for (const [i, path] of pages.entries()) {
        const res = await get(path, held[i]?.headers.get("etag") ?? "", encoding);
        expect(res.status).toBe(200);
        expect(res.body[0].pipeline.description).toBe(description);
      }
      const one = await get(`${builds0}/${added.number}`, undefined, encoding);
      expect(one.body.pipeline.description).toBe(description);
    },
  );

  it("answers exclude_pipeline and exclude_jobs pages apart from the full page", async () => {
    await create();
    const full = await settled(builds0);
    const etag = full.headers.get("etag") ?? "";
    for (const query of ["exclude_pipeline=true", "exclude_jobs=true"]) {
      const res = await get(`${builds0}?${query}`, etag);
      expect(res.status).toBe(200);
      expect(res.headers.get("etag")).not.toBe(etag);
    }
    const lean = await get(`${builds0}?exclude_pipeline=true&exclude_jobs=true`);
    expect(lean.body[0]).not.toHaveProperty("pipeline");
    expect(lean.body[0]).not.toHaveProperty("jobs");
  });

  it("sends gzip to a client that accepts it, the same JSON under the same tag made weak", async () => {
    await create();
    const plain = await settled(`${builds0}?per_page=5`);
    const etag = plain.headers.get("etag") ?? "";
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toBe("accept-encoding");
    // Twice: rendered (or kept) and gzipped once, then sent from what is kept.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${stack.apiUrl}${builds0}?per_page=5`, {
        headers: { authorization: `Bearer ${org.secret}`, "accept-encoding": "gzip" },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-encoding")).toBe("gzip");
      expect(res.headers.get("etag")).toBe(`W/${etag}`);
      // fetch decodes the body; Content-Length is what was sent.
      expect(Number(res.headers.get("content-length"))).toBeLessThan(Buffer.byteLength(plain.text) / 4);
      expect(await res.text()).toBe(plain.text);
    }
    // Either form of the tag names the answer, whichever encoding the client asks for.
    for (const tag of [etag, `W/${etag}`]) {
      expect((await get(`${builds0}?per_page=5`, tag, "gzip")).status).toBe(304);
      expect((await get(`${builds0}?per_page=5`, tag)).status).toBe(304);
    }
    // Refused gzip: plain JSON.
    const refused = await get(`${builds0}?per_page=5`, undefined, "gzip;q=0, identity");
    expect(refused.headers.get("content-encoding")).toBeNull();
    expect(refused.text).toBe(plain.text);
  });
});
