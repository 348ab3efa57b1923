import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService, Role } from "@conveyor/proto/identity";
import { type EventPublisher, fieldErrorsOf, SUBJECTS } from "@conveyor/runtime";
import { createIdentityServices, routeIdentityServices } from "./identity-service.js";
import { createMemoryIdentityRepository } from "./store/memory-identity-repository.js";
import { createMemoryPasswordRepository } from "./store/memory-password-repository.js";
import { createMemoryRegistryRepository } from "./store/memory-registry-repository.js";
import { createMemoryRuleRepository } from "./store/memory-rule-repository.js";
import { createMemorySessionRepository } from "./store/memory-session-repository.js";
import { createMemorySignInFailureRepository } from "./store/memory-sign-in-failure-repository.js";
import { createMemoryTeamRepository } from "./store/memory-team-repository.js";

function setup() {
  const published: string[] = [];
  const events: EventPublisher = {
    async publish(subject) {
      published.push(subject);
    },
  };
  const services = createIdentityServices({
    identity: createMemoryIdentityRepository(),
    teams: createMemoryTeamRepository(),
    rules: createMemoryRuleRepository(),
    registries: createMemoryRegistryRepository(),
    sessions: createMemorySessionRepository(),
    passwords: createMemoryPasswordRepository(),
    signInFailures: createMemorySignInFailureRepository(),
    events,
  });
  const transport = createRouterTransport((router) => routeIdentityServices(router, services));
  return { client: createClient(IdentityService, transport), published };
}

async function codeOf(promise: Promise<unknown>): Promise<Code | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("identity service", () => {
  it("creates an organization with a derived slug and refuses a clashing one", async () => {
    const { client, published } = setup();
    const { organization } = await client.createOrganization({ name: "Acme  Inc", teamsEnabled: true });
    expect(organization).toMatchObject({ slug: "acme-inc", name: "Acme  Inc", teamsEnabled: true });
    expect(published).toContain(SUBJECTS.identity.organizationCreated);
    const err = await client.createOrganization({ name: "Other", slug: "acme-inc" }).catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.AlreadyExists);
    expect(fieldErrorsOf(err as ConnectError)).toEqual([{ field: "slug", code: "has already been taken" }]);
  });

  it("validates users and refuses a duplicate email, case-insensitively", async () => {
    const { client } = setup();
    expect(await codeOf(client.createUser({ name: "", email: "nope" }))).toBe(Code.InvalidArgument);
    await client.createUser({ name: "Ann", email: "Ann@Example.com" });
    expect(await codeOf(client.createUser({ name: "Ann 2", email: "ann@example.com" }))).toBe(Code.AlreadyExists);
  });

  it("finds a user by id or by email regardless of case, and by nothing else", async () => {
    const { client } = setup();
    const { user } = await client.createUser({ name: "Ann", email: "ann@example.com" });
    expect((await client.getUser({ email: " ANN@Example.com " })).user).toEqual(user);
    expect((await client.getUser({ id: user?.id ?? "" })).user).toEqual(user);
    expect(await codeOf(client.getUser({ email: "bob@example.com" }))).toBe(Code.NotFound);
    expect(await codeOf(client.getUser({ id: user?.id ?? "", email: "ann@example.com" }))).toBe(Code.NotFound);
    expect(await codeOf(client.getUser({}))).toBe(Code.NotFound);
  });

  it("issues a token whose secret authenticates to the user's organizations, until revoked", async () => {
    const { client, published } = setup();
    const { organization: a } = await client.createOrganization({ name: "A" });
    const { organization: b } = await client.createOrganization({ name: "B" });
    const { user } = await client.createUser({ name: "Ann", email: "ann@example.com" });
    await client.addMember({ organization: a?.slug ?? "", userId: user?.id ?? "", role: Role.ADMIN });
    await client.addMember({ organization: b?.id ?? "", userId: user?.id ?? "" });

    const all = await client.createAccessToken({ userId: user?.id ?? "", scopes: ["read_organizations"] });
    expect(all.secret).toMatch(/^bkua_[0-9a-f]{40}$/);
    const { principal } = await client.authenticateAccessToken({ secret: all.secret });
    expect(principal?.organizations.map((o) => [o.organization?.slug, o.role])).toEqual(
      expect.arrayContaining([
        ["a", Role.ADMIN],
        ["b", Role.MEMBER],
      ]),
    );

    const onlyB = await client.createAccessToken({
      userId: user?.id ?? "",
      scopes: ["read_builds"],
      organizations: ["b"],
    });
    const narrowed = await client.authenticateAccessToken({ secret: onlyB.secret });
    expect(narrowed.principal?.organizations.map((o) => o.organization?.slug)).toEqual(["b"]);

    await client.revokeAccessToken({ secret: all.secret });
    expect(published).toContain(SUBJECTS.identity.tokenRevoked);
    expect(await codeOf(client.authenticateAccessToken({ secret: all.secret }))).toBe(Code.Unauthenticated);
    expect(await codeOf(client.authenticateAccessToken({ secret: "bkua_unknown" }))).toBe(Code.Unauthenticated);
    expect(await codeOf(client.authenticateAccessToken({ secret: "" }))).toBe(Code.Unauthenticated);
  });

  it("rejects unknown scopes, empty scopes and unknown organizations", async () => {
    const { client } = setup();
    const { user } = await client.createUser({ name: "Ann", email: "ann@example.com" });
    const userId = user?.id ?? "";
    for (const req of [
      { userId, scopes: ["read_builds", "sudo"] },
      { userId, scopes: [] },
      { userId, scopes: ["read_builds"], organizations: ["ghost"] },
    ]) {
      expect(await codeOf(client.createAccessToken(req))).toBe(Code.InvalidArgument);
    }
    expect(await codeOf(client.createAccessToken({ userId: "not-a-uuid", scopes: ["read_builds"] }))).toBe(
      Code.NotFound,
    );
  });

  it("lists members by name with a total, and changes a role in place", async () => {
    const { client } = setup();
    const { organization } = await client.createOrganization({ name: "Org" });
    const orgId = organization?.id ?? "";
    const ids: string[] = [];
    for (const name of ["Cy", "Al", "Bo"]) {
      const { user } = await client.createUser({ name, email: `${name}@example.com` });
      ids.push(user?.id ?? "");
      await client.addMember({ organization: orgId, userId: user?.id ?? "" });
    }
    const page1 = await client.listMembers({ organizationId: orgId, page: 1, perPage: 2 });
    expect(page1.totalCount).toBe(3);
    expect(page1.members.map((m) => m.user?.name)).toEqual(["Al", "Bo"]);
    const page2 = await client.listMembers({ organizationId: orgId, page: 2, perPage: 2 });
    expect(page2.members.map((m) => m.user?.name)).toEqual(["Cy"]);

    await client.addMember({ organization: orgId, userId: ids[0] ?? "", role: Role.ADMIN });
    const { member } = await client.getMember({ organizationId: orgId, userId: ids[0] ?? "" });
    expect(member?.role).toBe(Role.ADMIN);
    expect((await client.listMembers({ organizationId: orgId })).totalCount).toBe(3);
  });

  it("answers NotFound for unknown organizations, users and members", async () => {
    const { client } = setup();
    const { organization } = await client.createOrganization({ name: "Org" });
    expect(await codeOf(client.getOrganization({ slug: "ghost" }))).toBe(Code.NotFound);
    expect(await codeOf(client.getUser({ id: "00000000-0000-4000-8000-000000000000" }))).toBe(Code.NotFound);
    expect(await codeOf(client.getMember({ organizationId: organization?.id ?? "", userId: "x" }))).toBe(Code.NotFound);
  });
});
