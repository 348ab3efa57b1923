import { generateKeyPairSync, randomBytes } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import { keyRingFrom } from "./credential-envelope.js";
import { createMemorySourceProviderRepository } from "./memory-source-provider-repository.js";
import {
  createSourceProviders,
  MAX_SOURCE_PROVIDERS_PER_ORGANIZATION,
  type NewSourceProvider,
  rewrapCredentials,
} from "./source-providers.js";

const b64 = () => randomBytes(32).toString("base64");
const input = (over: Partial<NewSourceProvider> = {}): NewSourceProvider => ({
  organizationId: "org-1",
  kind: "gitea",
  apiUrl: "http://127.0.0.1:3000",
  token: "gitea-token-1",
  description: "Local Gitea",
  createdBy: "user-1",
  ...over,
});

async function fieldErrors(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    if (err instanceof ConnectError) return { code: err.code, fields: fieldErrorsOf(err), message: err.message };
    throw err;
  }
  throw new Error("expected a refusal");
}

function setup(key = b64(), previous = "") {
  const repository = createMemorySourceProviderRepository();
  let clock = 0;
  const providers = createSourceProviders({
    repository,
    keyRing: keyRingFrom(key, previous),
    now: () => new Date(Date.UTC(2026, 0, 1) + clock++ * 1000),
  });
  return { repository, providers };
}

describe("source providers", () => {
  it("adds a connection with its API URL normalized and its token sealed, never stored in the clear", async () => {
    const { repository, providers } = setup();
    const doc = await providers.create(input());
    expect(doc).toMatchObject({
      organizationId: "org-1",
      kind: "gitea",
      apiUrl: "http://127.0.0.1:3000/api/v1",
      repositoryHost: "127.0.0.1",
      credentialType: "token",
      description: "Local Gitea",
      createdBy: "user-1",
    });
    expect(JSON.stringify([...repository.docs.values()])).not.toContain("gitea-token-1");
    expect(providers.credential(doc)).toEqual({ type: "token", token: "gitea-token-1" });
  });

  it("gives GitHub, GitLab and Bitbucket their public API when no URL is given", async () => {
    const { providers } = setup();
    expect((await providers.create(input({ kind: "github", apiUrl: "" }))).repositoryHost).toBe("github.com");
    expect((await providers.create(input({ kind: "gitlab", apiUrl: "" }))).apiUrl).toBe("https://gitlab.com/api/v4");
    expect((await providers.create(input({ kind: "bitbucket", apiUrl: "" }))).repositoryHost).toBe("bitbucket.org");
  });

  it.each([
    [{ kind: "forgejo" }, "kind", /must be one of github, github_enterprise, gitlab, bitbucket, gitea/],
    [{ kind: "gitea", apiUrl: "" }, "api_url", /needs its API URL/],
    [{ apiUrl: "file:///etc/passwd" }, "api_url", /http or https/],
    [{ apiUrl: "https://u:p@example.com" }, "api_url", /credentials/],
    [{ token: "" }, "token", /can't be blank/],
    [{ token: "a b" }, "token", /spaces/],
    [{ token: "a\u0000b" }, "token", /control/],
    [{ token: "x".repeat(4097) }, "token", /longer than 4096/],
    [{ description: "d".repeat(256) }, "description", /longer than 255/],
    [{ description: "a\nb" }, "description", /control/],
  ])("refuses %p naming %s, storing nothing", async (over, field, code) => {
    const { repository, providers } = setup();
    const refusal = await fieldErrors(providers.create(input(over)));
    expect(refusal.fields.map((f) => f.field)).toEqual([field]);
    expect(refusal.fields[0]?.code).toMatch(code);
    expect(repository.docs.size).toBe(0);
  });

  it("names every wrong field at once", async () => {
    const { providers } = setup();
    const refusal = await fieldErrors(providers.create(input({ kind: "svn", token: "" })));
    expect(refusal.fields.map((f) => f.field).sort()).toEqual(["kind", "token"]);
  });

  it("refuses an API URL the outbound policy refuses, naming api_url", async () => {
    const repository = createMemorySourceProviderRepository();
    const providers = createSourceProviders({
      repository,
      keyRing: keyRingFrom(b64(), ""),
      now: () => new Date(),
      refusedUrl: async (url) => (url.includes("169.254.") ? "is a link-local address" : null),
    });
    const refusal = await fieldErrors(providers.create(input({ apiUrl: "http://169.254.169.254" })));
    expect(refusal.fields).toEqual([{ field: "api_url", code: "is a link-local address" }]);
    expect(repository.docs.size).toBe(0);
  });

  it("refuses to add a connection without CREDENTIALS_ENCRYPTION_KEY", async () => {
    const providers = createSourceProviders({
      repository: createMemorySourceProviderRepository(),
      keyRing: null,
      now: () => new Date(),
    });
    const refusal = await fieldErrors(providers.create(input()));
    expect(refusal.message).toMatch(/CREDENTIALS_ENCRYPTION_KEY/);
  });

  it(`keeps at most ${MAX_SOURCE_PROVIDERS_PER_ORGANIZATION} connections per organization`, async () => {
    const { providers } = setup();
    for (let i = 0; i < MAX_SOURCE_PROVIDERS_PER_ORGANIZATION; i++) await providers.create(input());
    const refusal = await fieldErrors(providers.create(input()));
    expect(refusal.message).toMatch(/at most 20/);
    // Another organization is not held to the first one's count.
    await expect(providers.create(input({ organizationId: "org-2" }))).resolves.toBeDefined();
  });

  it("lists oldest first, reads and removes only within the organization", async () => {
    const { providers } = setup();
    const a = await providers.create(input());
    const b = await providers.create(input({ kind: "github", apiUrl: "" }));
    const other = await providers.create(input({ organizationId: "org-2" }));
    expect((await providers.list("org-1")).map((d) => d._id)).toEqual([a._id, b._id]);
    await expect(providers.get("org-1", other._id)).rejects.toThrow(/No source provider found/);
    await expect(providers.remove("org-1", other._id)).rejects.toThrow(/No source provider found/);
    await providers.remove("org-1", a._id);
    expect((await providers.list("org-1")).map((d) => d._id)).toEqual([b._id]);
    expect((await providers.list("org-2")).map((d) => d._id)).toEqual([other._id]);
  });

  it("cannot open a credential moved onto another connection", async () => {
    const { providers } = setup();
    const a = await providers.create(input({ token: "token-a" }));
    const b = await providers.create(input({ token: "token-b" }));
    expect(() => providers.credential({ ...b, credential: a.credential })).toThrow(/does not open/);
  });
});

describe("GitHub App connections", () => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();

  it("take an App's id and private key instead of a token, sealed, the id shown", async () => {
    const { repository, providers } = setup();
    const doc = await providers.create(
      input({ kind: "github", apiUrl: "", token: "", appId: "12345", privateKey: pem }),
    );
    expect(doc).toMatchObject({ credentialType: "github_app", appId: "12345", repositoryHost: "github.com" });
    expect(JSON.stringify([...repository.docs.values()])).not.toContain("PRIVATE KEY");
    expect(providers.credential(doc)).toEqual({ type: "github_app", app: { appId: "12345", privateKey: pem.trim() } });
  });

  it.each([
    [{ kind: "gitea", apiUrl: "http://127.0.0.1:3000", appId: "1" }, "app_id", /github and github_enterprise/],
    [{ kind: "github", appId: "1", token: "t" }, "token", /must be empty/],
    [{ kind: "github", appId: "abc", token: "" }, "app_id", /numeric id/],
    [{ kind: "github", appId: "1", token: "", privateKey: "nope" }, "private_key", /not a private key/],
    [{ kind: "github", appId: "1", token: "", privateKey: "k".repeat(9000) }, "private_key", /longer than 8192/],
  ])("refuse %p naming %s", async (over, field, code) => {
    const { repository, providers } = setup();
    const refusal = await fieldErrors(providers.create(input({ apiUrl: "", privateKey: pem, ...over })));
    expect(refusal.fields.map((f) => f.field)).toEqual([field]);
    expect(refusal.fields[0]?.code).toMatch(code);
    expect(repository.docs.size).toBe(0);
  });

  it("refuse a key that is not RSA", async () => {
    const { providers } = setup();
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" });
    const refusal = await fieldErrors(
      providers.create(input({ kind: "github", apiUrl: "", token: "", appId: "1", privateKey: ec.toString() })),
    );
    expect(refusal.fields).toEqual([{ field: "private_key", code: "must be an RSA private key (PEM)" }]);
  });
});

describe("rewrapCredentials", () => {
  it("moves every credential to the current key; afterwards the old key is not needed", async () => {
    const [oldKey, newKey] = [b64(), b64()];
    const before = setup(oldKey);
    const docs = [
      await before.providers.create(input({ token: "t1" })),
      await before.providers.create(input({ token: "t2", organizationId: "org-2" })),
    ];
    const during = keyRingFrom(newKey, oldKey);
    expect(await rewrapCredentials(before.repository, during, 1)).toEqual({ rewrapped: 2, unopened: [] });
    // A second run has nothing to do.
    expect(await rewrapCredentials(before.repository, during)).toEqual({ rewrapped: 0, unopened: [] });
    const after = createSourceProviders({
      repository: before.repository,
      keyRing: keyRingFrom(newKey, ""),
      now: () => new Date(),
    });
    const stored = await Promise.all(docs.map((d) => after.get(d.organizationId, d._id)));
    expect(stored.map((d) => after.credential(d))).toEqual([
      { type: "token", token: "t1" },
      { type: "token", token: "t2" },
    ]);
  });

  it("reports the credentials whose key it does not hold and leaves them as they are", async () => {
    const before = setup();
    const doc = await before.providers.create(input());
    const stranger = keyRingFrom(b64(), "");
    expect(await rewrapCredentials(before.repository, stranger)).toEqual({ rewrapped: 0, unopened: [doc._id] });
    expect(before.providers.credential(await before.providers.get("org-1", doc._id))).toEqual({
      type: "token",
      token: "gitea-token-1",
    });
  });
});
