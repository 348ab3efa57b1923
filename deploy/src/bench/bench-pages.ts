import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import type { Target } from "./bench-measure.js";

// The pages' rows of `npm run bench` (docs/pages.md): a full organization page (30 pipelines, each with builds for
// its bars), a pipeline page, and the page of a build of 200 jobs, read by a signed-in administrator as a browser
// reads them. Server time is what autocannon measures through the gateway, beside the hello-world baseline.

/** Pipelines the organization page shows on its first page, and builds each gets for its bars. */
const PAGE_PIPELINES = 30;
const BUILDS_PER_PIPELINE = 10;
/** The jobs of the large build whose page is measured. */
export const LARGE_BUILD_JOBS = 200;

/** Names of the pipelines this module makes (never "Bench…", which names the REST rows' pipeline). */
const PREFIX = "Pages bench";

const configuration = (parallelism: number) =>
  `steps:\n  - command: make test\n    parallelism: ${parallelism}\n    agents: {queue: bench-idle}\n`;

interface Where {
  apiUrl: string;
  token: string;
  orgSlug: string;
  /** The identity service, to sign a person in as `ci-admin user login-link` does. */
  identityUrl: string;
  /** The cluster of the REST rows' pipeline, which these pipelines join. */
  clusterId: string;
}

/** A session cookie of a new administrator of the organization. */
async function adminCookie(w: Where, organizationId: string): Promise<string> {
  const identity = createServiceClient(IdentityService, w.identityUrl);
  const { user } = await identity.createUser({ name: "Bench Admin", email: `bench-pages-${Date.now()}@example.com` });
  await identity.addMember({ organization: organizationId, userId: user?.id ?? "", role: Role.ADMIN });
  const link = await identity.createSignInLink({ userId: user?.id ?? "" });
  const session = await identity.signInWithLink({ secret: link.secret });
  return `conveyor_session=${session.secret}`;
}

/**
 * Makes (once per stack) the pages' pipelines and builds, signs an administrator in, and answers the three page
 * targets: `/{org}`, `/{org}/{pipeline}` and `/{org}/{pipeline}/builds/1` of the 200-job build.
 */
export async function pageTargets(w: Where, say: (line: string) => void): Promise<Target[]> {
  const headers = { authorization: `Bearer ${w.token}`, "content-type": "application/json" };
  const org = `${w.apiUrl}/v2/organizations/${w.orgSlug}`;
  const { id: organizationId } = (await (await fetch(org, { headers })).json()) as { id: string };
  const list = (await (await fetch(`${org}/pipelines?per_page=100`, { headers })).json()) as Array<{
    slug: string;
    name: string;
  }>;
  const have = new Map(list.filter((p) => p.name.startsWith(PREFIX)).map((p) => [p.name, p.slug]));
  const ensure = async (name: string, parallelism: number, builds: number): Promise<string> => {
    let slug = have.get(name);
    if (!slug) {
      const res = await fetch(`${org}/pipelines`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          name,
          repository: "https://example.com/bench.git",
          cluster_id: w.clusterId,
          configuration: configuration(parallelism),
        }),
      });
      if (res.status !== 201) throw new Error(`bench pages: creating ${name} answered ${res.status}`);
      slug = ((await res.json()) as { slug: string }).slug;
      have.set(name, slug);
      for (let n = 0; n < builds; n++) {
        const created = await fetch(`${org}/pipelines/${slug}/builds`, {
          method: "POST",
          headers,
          body: JSON.stringify({ commit: "HEAD", branch: "main", message: `pages bench build ${n + 1}` }),
        });
        if (created.status !== 201) throw new Error(`bench pages: a build of ${name} answered ${created.status}`);
      }
    }
    return slug;
  };
  say(`pages: ${PAGE_PIPELINES} pipelines of ${BUILDS_PER_PIPELINE} builds, and a build of ${LARGE_BUILD_JOBS} jobs…`);
  const large = await ensure(`${PREFIX} ${LARGE_BUILD_JOBS} jobs`, LARGE_BUILD_JOBS, 1);
  for (let i = 1; i < PAGE_PIPELINES; i++)
    await ensure(`${PREFIX} ${String(i).padStart(2, "0")}`, 1, BUILDS_PER_PIPELINE);
  const pipeline = await ensure(`${PREFIX} 01`, 1, BUILDS_PER_PIPELINE);
  const cookie = await adminCookie(w, organizationId);
  const page = { cookie, accept: "text/html", "accept-encoding": "identity" };
  // A page's cost is spread over the gateway and the services it reads: CPU per request says where it goes.
  const targets: Target[] = [
    { name: "page /{org} (30 pipelines)", url: `${w.apiUrl}/${w.orgSlug}`, headers: page, cpu: true },
    { name: "page /{org}/{pipeline}", url: `${w.apiUrl}/${w.orgSlug}/${pipeline}`, headers: page, cpu: true },
    {
      name: `page …/builds/{n} (${LARGE_BUILD_JOBS} jobs)`,
      url: `${w.apiUrl}/${w.orgSlug}/${large}/builds/1`,
      headers: page,
      cpu: true,
    },
  ];
  // A page that does not answer 200 with HTML would measure an error page: refuse to measure it.
  for (const t of targets) {
    const res = await fetch(t.url, { headers: t.headers, redirect: "manual" });
    const body = await res.text();
    if (res.status !== 200 || !body.includes("<html")) {
      throw new Error(`bench pages: ${t.name} answered ${res.status} ${body.slice(0, 200)}`);
    }
  }
  return targets;
}
