import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import type { Person } from "./browser.js";
import { runCiAdmin } from "./ci-admin.js";
import { agents, arrangeCluster, identity, send, unique } from "./stack-env.js";

// What the browser suites arrange before they open pages: an organization with people who sign in with passwords
// (set through ci-admin, as an operator would), a cluster with its agent token, and pipelines and builds created
// over REST by the organization's admin.

// biome-ignore lint/suspicious/noExplicitAny: REST bodies, read field by field by the suites.
export type Json = any;

/** Every scope: the admin's token arranges pipelines, builds, teams and agents over REST. */
const ADMIN_SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_build_logs",
  "read_agents",
  "write_agents",
  "read_artifacts",
  "read_job_env",
  "view_teams",
  "write_teams",
];

const _repoRoot = join(__dirname, "..", "..");

/** A person with an account: their user, email and password, and a REST token of theirs. */
export interface Account {
  id: string;
  name: string;
  email: string;
  password: string;
  secret: string;
}

/** A password strong enough for any rule identity applies. */
export function newPassword(): string {
  return `Pw-${crypto.randomUUID()}`;
}

/**
 * Sets a user's password as an operator does, with `ci-admin user set-password` (the password on standard input),
 * when `through` is "ci-admin"; otherwise with identity's SetPassword directly, which is what ci-admin calls (faster
 * for suites that only need a person signed in).
 */
export async function setPassword(user: { id: string; email: string }, password: string, through?: "ci-admin") {
  if (through !== "ci-admin") {
    await identity.setPassword({ userId: user.id, password });
    return;
  }
  const res = await runCiAdmin(["user", "set-password", "--email", user.email], `${password}\n`);
  if (res.code !== 0) throw new Error(`ci-admin user set-password failed (${res.code}): ${res.stderr}`);
}

/** An organization for a browser suite: its admin (an account), a cluster and the cluster's agent token. */
export interface WebOrg {
  id: string;
  slug: string;
  name: string;
  admin: Account;
  clusterId: string;
  agentToken: string;
}

/** Creates a user who can sign in (a password and a REST token with every scope), in no organization yet. */
export async function arrangePerson(name = unique("Person")): Promise<Account> {
  const email = `${unique("person")}@example.com`;
  const { user } = await identity.createUser({ name, email });
  if (!user) throw new Error("user arrangement failed");
  const { secret } = await identity.createAccessToken({ userId: user.id, scopes: ADMIN_SCOPES });
  const password = newPassword();
  await setPassword(user, password);
  return { id: user.id, name: user.name, email, password, secret };
}

/**
 * Arranges an organization (teams enabled unless told otherwise) with an admin who can sign in, and a cluster with
 * an agent token. Names may be given (the hostile-input suite sends payloads through them).
 */
export async function arrangeWebOrg(
  opts: { teamsEnabled?: boolean; name?: string; adminName?: string } = {},
): Promise<WebOrg> {
  const { organization } = await identity.createOrganization({
    name: opts.name ?? unique("Org"),
    teamsEnabled: opts.teamsEnabled ?? true,
  });
  if (!organization) throw new Error("organization arrangement failed");
  const admin = await arrangePerson(opts.adminName);
  await identity.addMember({ organization: organization.id, userId: admin.id, role: Role.ADMIN });
  const clusterId = await arrangeCluster(organization.id);
  const { secret: agentToken } = await agents.createAgentToken({
    organizationId: organization.id,
    clusterId,
    description: "browser suite",
  });
  return { id: organization.id, slug: organization.slug, name: organization.name, admin, clusterId, agentToken };
}

/** Adds a person to the organization (a member unless `role` says admin) who can sign in. */
export async function arrangeAccount(org: WebOrg, opts: { role?: Role; name?: string } = {}): Promise<Account> {
  const person = await arrangePerson(opts.name);
  await identity.addMember({ organization: org.id, userId: person.id, role: opts.role ?? Role.MEMBER });
  return person;
}

/** Creates a pipeline of `steps` in the organization's cluster, as its admin; resolves with the REST answer. */
export async function arrangePipeline(
  org: WebOrg,
  opts: { name?: string; steps: Json[]; description?: string; repository?: string; defaultBranch?: string },
): Promise<Json> {
  const res = await send("POST", `/v2/organizations/${org.slug}/pipelines`, org.admin.secret, {
    name: opts.name ?? unique("Pipeline"),
    description: opts.description,
    repository: opts.repository ?? "git@github.com:acme/app.git",
    cluster_id: org.clusterId,
    default_branch: opts.defaultBranch ?? "main",
    configuration: JSON.stringify({ steps: opts.steps }),
  });
  if (res.status !== 201) throw new Error(`pipeline: ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a build as the admin (or `secret`'s owner); resolves with the REST answer. */
export async function arrangeBuild(
  org: WebOrg,
  pipelineSlug: string,
  body: Json = {},
  secret = org.admin.secret,
): Promise<Json> {
  const res = await send("POST", `/v2/organizations/${org.slug}/pipelines/${pipelineSlug}/builds`, secret, {
    commit: "HEAD",
    branch: "main",
    message: "browser suite",
    ...body,
  });
  if (res.status !== 201) throw new Error(`build: ${res.status} ${res.text}`);
  return res.body;
}

/** Reads a build over REST as the admin. */
export async function readBuild(org: WebOrg, pipelineSlug: string, number: number): Promise<Json> {
  const res = await send(
    "GET",
    `/v2/organizations/${org.slug}/pipelines/${pipelineSlug}/builds/${number}`,
    org.admin.secret,
  );
  if (res.status !== 200) throw new Error(`build: ${res.status} ${res.text}`);
  return res.body;
}

/** The path of a web_url (the pages' links are absolute; a person's page is opened by its path). */
export function pathOf(webUrl: string): string {
  const url = new URL(webUrl);
  return `${url.pathname}${url.search}${url.hash}`;
}

/** Signs a person in through the sign-in page with their email and password, and waits for the page it leads to. */
export async function signIn(person: Person, account: Account, next = "/"): Promise<void> {
  const page = await person.open(`/login?next=${encodeURIComponent(next)}`, { label: "sign-in" });
  await page.getByLabel(/email/i).fill(account.email);
  await page.getByLabel(/password/i).fill(account.password);
  await Promise.all([
    page.waitForURL((url) => !url.pathname.startsWith("/login")),
    page.getByRole("button", { name: /sign in/i }).click(),
  ]);
}
