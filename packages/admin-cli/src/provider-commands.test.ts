import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "./args.js";
import { allFlags, type CommandContext } from "./commands.js";
import { PROVIDER_COMMANDS } from "./provider-commands.js";

const provider = {
  id: "p-1",
  kind: "gitea",
  apiUrl: "http://127.0.0.1:3000/api/v1",
  repositoryHost: "127.0.0.1",
  credentialType: "token",
  description: "",
  createdAt: { seconds: BigInt(1_772_409_600), nanos: 0 },
};

/** A context whose identity knows organization acme and whose notifications service records the calls it gets. */
function context(stdin = "from-stdin") {
  const calls: Array<[string, unknown]> = [];
  const record = (name: string) => async (req: unknown) => {
    calls.push([name, req]);
    return name === "listSourceProviders" ? { sourceProviders: [provider] } : { sourceProvider: provider };
  };
  const ctx = {
    identity: () => ({ getOrganization: async () => ({ organization: { id: "o-1", slug: "acme" } }) }),
    sourceProviders: () => ({
      createSourceProvider: record("createSourceProvider"),
      listSourceProviders: record("listSourceProviders"),
      deleteSourceProvider: record("deleteSourceProvider"),
    }),
    readPassword: async () => stdin,
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (line: string, ctx: CommandContext) => {
  const args = parseArgs(line.split(" "), allFlags());
  const key = args.words.slice(0, 2).join(" ");
  const command = PROVIDER_COMMANDS[key];
  if (!command) throw new Error(`no command ${key}`);
  return command.run(args, ctx);
};

describe("the provider commands", () => {
  it("adds a connection with the flags given and prints it as REST shows it, without a token", async () => {
    const { ctx, calls } = context();
    const out = await run(
      "provider add --org acme --kind gitea --api-url http://127.0.0.1:3000 --token t0k3n --description Local",
      ctx,
    );
    expect(calls).toEqual([
      [
        "createSourceProvider",
        {
          organizationId: "o-1",
          kind: "gitea",
          apiUrl: "http://127.0.0.1:3000",
          token: "t0k3n",
          appId: "",
          privateKey: "",
          description: "Local",
        },
      ],
    ]);
    expect(out).toEqual({
      id: "p-1",
      kind: "gitea",
      api_url: "http://127.0.0.1:3000/api/v1",
      repository_host: "127.0.0.1",
      credential_type: "token",
      app_id: null,
      description: null,
      created_at: "2026-03-02T00:00:00.000Z",
    });
    expect(JSON.stringify(out)).not.toContain("t0k3n");
  });

  it("reads the token from stdin with --token -", async () => {
    const { ctx, calls } = context("secret-from-stdin");
    await run("provider add --org acme --kind github --token -", ctx);
    expect(calls[0]?.[1]).toMatchObject({ kind: "github", apiUrl: "", token: "secret-from-stdin" });
  });

  it("adds a GitHub App from its id and key file, and needs both", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ci-admin-key-"));
    const file = join(dir, "app.pem");
    writeFileSync(file, "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n");
    const { ctx, calls } = context();
    await run(`provider add --org acme --kind github --app-id 4242 --private-key-file ${file}`, ctx);
    expect(calls[0]?.[1]).toMatchObject({
      kind: "github",
      token: "",
      appId: "4242",
      privateKey: expect.stringContaining("abc"),
    });
    await expect(run("provider add --org acme --kind github --app-id 4242", ctx)).rejects.toThrow(/both/);
    await expect(
      run(`provider add --org acme --kind github --app-id 1 --private-key-file ${dir}/none`, ctx),
    ).rejects.toThrow(/cannot read/);
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists and removes by organization id", async () => {
    const { ctx, calls } = context();
    expect(await run("provider list --org acme", ctx)).toEqual([expect.objectContaining({ id: "p-1" })]);
    expect(await run("provider remove --org acme --id p-1", ctx)).toEqual({ id: "p-1", removed: true });
    expect(calls).toEqual([
      ["listSourceProviders", { organizationId: "o-1" }],
      ["deleteSourceProvider", { organizationId: "o-1", id: "p-1" }],
    ]);
  });

  it("needs --token and --kind", async () => {
    const { ctx } = context();
    await expect(run("provider add --org acme --kind gitea", ctx)).rejects.toThrow(/--token/);
    await expect(run("provider add --org acme --token x", ctx)).rejects.toThrow(/--kind/);
  });
});
