import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AccessTokenView,
  accessTokenReusable,
  agentTokenReusable,
  type Credentials,
  readCredentials,
  writeCredentials,
} from "./credentials.js";
import { ALL_SCOPES } from "./scopes.js";

const want = { userId: "u1", organizationId: "o1", scopes: ALL_SCOPES };
const good: AccessTokenView = {
  userId: "u1",
  scopes: [...ALL_SCOPES],
  reachableOrganizationIds: ["o1"],
  revoked: false,
};

describe("accessTokenReusable", () => {
  it("reuses an active token of the admin with every scope that reaches the organization", () => {
    expect(accessTokenReusable(good, want)).toBe(true);
  });

  it.each<[string, AccessTokenView | undefined]>([
    ["unknown to the identity service", undefined],
    ["revoked", { ...good, revoked: true }],
    ["of another user", { ...good, userId: "u2" }],
    ["missing a scope", { ...good, scopes: ALL_SCOPES.filter((s) => s !== "write_clusters") }],
    ["limited to other organizations", { ...good, reachableOrganizationIds: ["o2"] }],
  ])("replaces a token %s", (_why, token) => {
    expect(accessTokenReusable(token, want)).toBe(false);
  });
});

describe("agentTokenReusable", () => {
  const wantToken = { organizationId: "o1", clusterId: "c1" };
  const token = { organizationId: "o1", clusterId: "c1", revoked: false };

  it("reuses an active token of the bootstrap cluster", () => {
    expect(agentTokenReusable(token, wantToken)).toBe(true);
  });

  it.each<[string, typeof token | undefined]>([
    ["unknown to the agents service", undefined],
    ["revoked", { ...token, revoked: true }],
    ["unclustered (saved by an older npm start)", { ...token, clusterId: "" }],
    ["of another cluster", { ...token, clusterId: "c2" }],
    ["of another organization", { ...token, organizationId: "o2" }],
  ])("replaces a token %s", (_why, t) => {
    expect(agentTokenReusable(t, wantToken)).toBe(false);
  });

  it("never reuses an unclustered token for want of a cluster", () => {
    expect(agentTokenReusable({ ...token, clusterId: "" }, { organizationId: "o1", clusterId: "" })).toBe(false);
  });
});

describe("credentials.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-creds-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is written readable by its owner only and read back", () => {
    const file = join(dir, "credentials.json");
    const creds: Credentials = {
      apiUrl: "http://127.0.0.1:8080",
      agentUrl: "http://127.0.0.1:8080/v3",
      organization: { id: "o1", slug: "conveyor", name: "Conveyor" },
      user: { id: "u1", email: "admin@conveyor.local", name: "Admin" },
      cluster: { id: "c1", name: "Default" },
      apiToken: { id: "t1", secret: "bkua_x", scopes: [...ALL_SCOPES] },
      agentToken: { id: "a1", secret: "bkat_y" },
      updatedAt: new Date().toISOString(),
    };
    writeCredentials(file, creds);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readCredentials(file)).toEqual(creds);
  });

  it("reads a missing or corrupt file as nothing saved", () => {
    expect(readCredentials(join(dir, "missing.json"))).toBeUndefined();
    const corrupt = join(dir, "corrupt.json");
    writeFileSync(corrupt, '{"apiUrl": "http://127.0.0.1:80');
    expect(readCredentials(corrupt)).toBeUndefined();
  });

  it("passes on a file it cannot read instead of taking it for nothing saved", () => {
    const unreadable = join(dir, "a-folder.json");
    mkdirSync(unreadable);
    expect(() => readCredentials(unreadable)).toThrow(/EISDIR/);
  });
});
