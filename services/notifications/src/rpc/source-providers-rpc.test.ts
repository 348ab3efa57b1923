import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import { keyRingFrom } from "../providers/credential-envelope.js";
import { createMemorySourceProviderRepository } from "../providers/memory-source-provider-repository.js";
import { createSourceProviders } from "../providers/source-providers.js";
import { createSourceProvidersRpcs } from "./source-providers-rpc.js";

// The handlers take no context argument they read; a stand-in keeps the calls typed.
const ctx = {} as never;

function setup() {
  const repository = createMemorySourceProviderRepository();
  const rpcs = createSourceProvidersRpcs(
    createSourceProviders({
      repository,
      keyRing: keyRingFrom(randomBytes(32).toString("base64"), ""),
      now: () => new Date("2026-01-01T00:00:00Z"),
    }),
  );
  return { repository, rpcs };
}

const create = {
  organizationId: "org-1",
  kind: "github",
  apiUrl: "",
  token: "ghp_secret",
  description: "GitHub",
  createdBy: "user-1",
} as never;

describe("SourceProvidersService", () => {
  it("creates, lists, gets and deletes, and no answer holds the token", async () => {
    const { rpcs } = setup();
    const created = await rpcs.createSourceProvider(create, ctx);
    const id = (created as { sourceProvider: { id: string } }).sourceProvider.id;
    expect(created).toMatchObject({
      sourceProvider: {
        organizationId: "org-1",
        kind: "github",
        apiUrl: "https://api.github.com",
        repositoryHost: "github.com",
        credentialType: "token",
        description: "GitHub",
        createdBy: "user-1",
      },
    });
    const listed = await rpcs.listSourceProviders({ organizationId: "org-1" } as never, ctx);
    const got = await rpcs.getSourceProvider({ organizationId: "org-1", id } as never, ctx);
    const shown = (answer: unknown) => JSON.stringify(answer, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    for (const answer of [created, listed, got]) expect(shown(answer)).not.toContain("ghp_secret");
    expect((listed as { sourceProviders: unknown[] }).sourceProviders).toHaveLength(1);
    await rpcs.deleteSourceProvider({ organizationId: "org-1", id } as never, ctx);
    await expect(rpcs.getSourceProvider({ organizationId: "org-1", id } as never, ctx)).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("answers NotFound for another organization's connection", async () => {
    const { rpcs } = setup();
    const created = (await rpcs.createSourceProvider(create, ctx)) as { sourceProvider: { id: string } };
    const id = created.sourceProvider.id;
    await expect(rpcs.getSourceProvider({ organizationId: "org-2", id } as never, ctx)).rejects.toMatchObject({
      code: Code.NotFound,
    });
    await expect(rpcs.deleteSourceProvider({ organizationId: "org-2", id } as never, ctx)).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("refuses a request without an organization, and bad fields by name, storing nothing", async () => {
    const { rpcs, repository } = setup();
    await expect(rpcs.listSourceProviders({ organizationId: "" } as never, ctx)).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    try {
      await rpcs.createSourceProvider({ ...(create as object), kind: "svn", token: "" } as never, ctx);
      throw new Error("expected a refusal");
    } catch (err) {
      expect(err).toBeInstanceOf(ConnectError);
      expect(fieldErrorsOf(err as ConnectError).map((e) => e.field)).toEqual(["kind", "token"]);
    }
    expect(repository.docs.size).toBe(0);
  });
});
