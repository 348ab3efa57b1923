import { mkdtempSync, rmSync, statSync } from "node:fs";
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
  it("reuses an active unclustered token of the organization only", () => {
    const token = { organizationId: "o1", clusterId: "", revoked: false };
    expect(agentTokenReusable(token, "o1")).toBe(true);
    expect(agentTokenReusable(undefined, "o1")).toBe(false);
    expect(agentTokenReusable({ ...token, revoked: true }, "o1")).toBe(false);
    expect(agentTokenReusable({ ...token, clusterId: "c1" }, "o1")).toBe(false);
    expect(agentTokenReusable(token, "o2")).toBe(false);
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
  });
});
