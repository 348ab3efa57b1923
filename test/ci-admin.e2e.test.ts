import { runCiAdmin } from "./support/ci-admin.js";
import { api, identity, stack, unique } from "./support/stack-env.js";

const ciAdmin = (...args: string[]) => runCiAdmin(args);
const ciAdminWithInput = (stdin: string, ...args: string[]) => runCiAdmin(args, stdin);

describe("ci-admin against the running stack", () => {
  it("creates an organization, a user, a membership and a token that works over REST, then revokes it", async () => {
    const org = await ciAdmin("org", "create", "--name", unique("Admin Org"), "--teams-enabled");
    expect(org.code).toBe(0);
    expect(org.json).toMatchObject({ teams_enabled: true });
    const user = await ciAdmin("user", "create", "--name", "Cli User", "--email", `${unique("cli")}@example.com`);
    expect(user.code).toBe(0);
    const member = await ciAdmin("member", "add", "--org", org.json.slug, "--user", user.json.id, "--role", "admin");
    expect(member.json).toMatchObject({ role: "admin", user_id: user.json.id });
    const token = await ciAdmin(
      "token",
      "create",
      "--user",
      user.json.id,
      "--scopes",
      "read_organizations,read_builds",
      "--orgs",
      org.json.slug,
    );
    expect(token.json.token).toMatch(/^bkua_/);
    expect(token.json.scopes).toEqual(["read_builds", "read_organizations"]);
    const res = await api(`/v2/organizations/${org.json.slug}`, token.json.token);
    expect(res.body.name).toBe(org.json.name);
    const revoked = await ciAdmin("token", "revoke", "--token", token.json.token);
    expect(revoked.json.revoked_at).toMatch(/Z$/);
  });

  it("fails with a clear message and a non-zero exit", async () => {
    const dup = await ciAdmin("org", "create", "--name", "x", "--slug", stack.orgSlug);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("slug has already been taken");
    const usage = await ciAdmin("token", "create", "--scopes", "read_builds");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--user is required");
    const bad = await ciAdmin("member", "add", "--org", stack.orgSlug, "--user", "nobody");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("No user found");
  });

  it("tells the user to start the stack when it cannot reach it", async () => {
    const res = await runCiAdmin(["org", "create", "--name", "x"], "", { IDENTITY_URL: "http://127.0.0.1:1" });
    expect(res.code).toBe(3);
    expect(res.stderr).toContain("npm start");
  });
});

describe("ci-admin agent tokens", () => {
  it("creates, lists and revokes a cluster's registration token; a revoked token registers no agent", async () => {
    const org = await ciAdmin("org", "create", "--name", unique("Agent Org"));
    const cluster = await ciAdmin("cluster", "create", "--org", org.json.slug, "--name", "Builders");
    expect((await ciAdmin("cluster", "list", "--org", org.json.slug)).json.clusters).toEqual([
      expect.objectContaining({ id: cluster.json.id, name: "Builders" }),
    ]);
    const created = await ciAdmin("agent-token", "create", "--org", org.json.slug, "--cluster", cluster.json.id);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ cluster_id: cluster.json.id, revoked_at: null });
    expect(created.json.token).toMatch(/^bkat_/);
    const listed = await ciAdmin("agent-token", "list", "--org", org.json.slug);
    expect(listed.json.tokens).toEqual([expect.objectContaining({ id: created.json.id, cluster_id: cluster.json.id })]);
    expect(JSON.stringify(listed.json)).not.toContain(created.json.token);

    const register = async () =>
      fetch(`${stack.agentUrl}/register`, {
        method: "POST",
        headers: { authorization: `Token ${created.json.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: unique("cli-agent"), meta_data: ["queue=default"] }),
      });
    expect((await register()).status).toBe(200);
    const revoked = await ciAdmin("agent-token", "revoke", "--org", org.json.slug, "--id", created.json.id);
    expect(revoked.json.revoked_at).toMatch(/Z$/);
    expect((await register()).status).toBe(401);
  });
});

describe("ci-admin and people's sign-in", () => {
  it("sets a password from stdin, refusing one that breaks the rule, and prints one-time sign-in links", async () => {
    const email = `${unique("pw")}@example.com`;
    const user = await ciAdmin("user", "create", "--name", "Pat", "--email", email);
    const short = await ciAdminWithInput("short\n", "user", "set-password", "--email", email);
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("password is too short: use at least 12 characters");
    const empty = await ciAdminWithInput("", "user", "set-password", "--user", user.json.id);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("no password on stdin");
    const set = await ciAdminWithInput(
      "a long enough password\n",
      "user",
      "set-password",
      "--email",
      email.toUpperCase(),
    );
    expect(set).toMatchObject({ code: 0, json: { user_id: user.json.id, email, password_set: true } });
    const signedIn = await identity.signInWithPassword({
      email,
      password: "a long enough password",
      clientAddress: "",
    });
    expect(signedIn.session?.userId).toBe(user.json.id);

    const link = await ciAdmin("user", "login-link", "--user", user.json.id);
    expect(link.code).toBe(0);
    expect(link.json.url).toMatch(new RegExp(`^${stack.apiUrl}/login/link/cvl_[0-9a-f]{40}$`));
    expect(Date.parse(link.json.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
    const secret = link.json.url.split("/").at(-1);
    expect((await identity.signInWithLink({ secret, clientAddress: "" })).session?.userId).toBe(user.json.id);

    const out = await ciAdmin("user", "sign-out", "--email", email);
    expect(out.json).toMatchObject({ user_id: user.json.id, sessions_ended: 2 });
  });

  it("names what is wrong with a user's sign-in command", async () => {
    const unknown = await ciAdmin("user", "login-link", "--email", `${unique("nobody")}@example.com`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("No user found");
    const both = await ciAdmin("user", "login-link", "--email", "a@example.com", "--user", "u");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give the user by --email or by --user");
    // A password is never taken from the command line.
    const argv = await ciAdmin("user", "set-password", "--email", "a@example.com", "--password", "secret secret");
    expect(argv.code).toBe(2);
    expect(argv.stderr).toContain("unknown flag --password");
  });
});
