import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeMember, arrangeOrgUser, send, stack } from "./support/stack-env.js";

// Builds test/go-client/secrets-check (the official go-buildkite client, v4) into the tool cache and runs it against
// a cluster: ClusterSecrets.Create, List, Get, Update, UpdateValue and Delete must decode and work, and no answer may
// carry a value.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "secrets-check");
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const SCOPES = ["read_secret_details", "write_secrets"];

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./secrets-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
}, 300_000);

describe("go-buildkite's ClusterSecrets against the stack", () => {
  it("creates, lists, gets, updates, rotates and deletes a secret, never answering its value", async () => {
    const org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
    const clusterId = await arrangeCluster(org.organization.id);
    const value = `cvsv_${randomBytes(20).toString("hex")}`;
    const rotated = `cvsv_${randomBytes(20).toString("hex")}`;
    const text = execFileSync(binary, [], {
      env: {
        ...process.env,
        CONVEYOR_API_URL: stack.apiUrl,
        CONVEYOR_API_TOKEN: org.secret,
        CONVEYOR_ORG_SLUG: org.organization.slug,
        CHECK_CLUSTER: clusterId,
        CHECK_VALUE: value,
        CHECK_NEW_VALUE: rotated,
      },
      encoding: "utf8",
    });
    expect(text).not.toContain(value);
    expect(text).not.toContain(rotated);
    const out = JSON.parse(text);
    const clusterUrl = `${stack.apiUrl}/v2/organizations/${org.organization.slug}/clusters/${clusterId}`;
    expect(out.created).toMatchObject({
      key: "DEPLOY_KEY",
      description: "deploys",
      policy: "- pipeline_slug: web\n  build_branch: main\n",
      url: `${clusterUrl}/secrets/${out.created.id}`,
      cluster_url: clusterUrl,
      created_by: { id: org.user.id, name: org.user.name, email: org.user.email },
      organization: { id: org.organization.id, slug: org.organization.slug },
    });
    expect(out.created.created_at).toMatch(ISO);
    expect(out.listed.map((s: { id: string }) => s.id)).toEqual([out.created.id]);
    expect(out.got).toMatchObject({ id: out.created.id, key: "DEPLOY_KEY" });
    expect(out.updated).toMatchObject({ description: "deploys the web", policy: out.created.policy });
    expect(out.updated.updated_by).toMatchObject({ id: org.user.id });
    expect(out.value_status).toBe(200);
    expect(out.after_value.description).toBe("deploys the web");
    expect(out.invalid_error).toMatch(/^422 .*"field":"key".*cannot start with buildkite or bk/);
    expect(out.delete_status).toBe(204);
    expect(out.missing_status).toBe(404);
    expect(out.missing_error).toBe("No secret found");
  });

  it("is refused to members who do not maintain the cluster, and without the secrets scopes", async () => {
    const org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
    const clusterId = await arrangeCluster(org.organization.id);
    const base = `/v2/organizations/${org.organization.slug}/clusters/${clusterId}/secrets`;
    const member = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    expect((await send("GET", base, member.secret)).status).toBe(403);
    expect((await send("POST", base, member.secret, { key: "K", value: "v" })).status).toBe(403);
    const clusters = await arrangeMember(org.organization.id, Role.ADMIN, ["read_clusters", "write_clusters"]);
    expect((await send("GET", base, clusters.secret)).status).toBe(403);
    const bad = await send("POST", base, org.secret, { key: "K", value: "v", policy: "- build_creator_team: x" });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0]).toMatchObject({ field: "policy" });
    expect((await send("GET", base, org.secret)).body).toEqual([]);
  });
});
