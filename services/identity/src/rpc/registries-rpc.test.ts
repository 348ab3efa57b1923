import { Code } from "@connectrpc/connect";
import { hashSecret, newId } from "@conveyor/runtime";
import { failure, world } from "../test-support.js";

describe("registries service", () => {
  it("issues tokens stored as hashes, shows the secret once, updates and deletes them", async () => {
    const w = await world();
    const { registry } = await w.registries.createRegistry({
      organization: w.orgId,
      name: "Node Packages",
      ecosystem: "npm",
    });
    expect(registry?.slug).toBe("node-packages");
    const base = { organizationId: w.orgId, actorId: w.admin, registry: "node-packages" };
    const created = await w.registries.createRegistryToken({ ...base, description: "CI" });
    expect(created.secret).toMatch(/^bkpt_[0-9a-f]{40}$/);
    expect(created.token).toMatchObject({ description: "CI", createdBy: { id: w.admin } });
    const id = created.token?.id ?? "";
    const stored = await w.registryRepo.findToken(registry?.id ?? "", id);
    expect(stored?.hash).toBe(hashSecret(created.secret));
    expect(JSON.stringify(stored)).not.toContain(created.secret);
    const got = await w.registries.getRegistryToken({ ...base, id });
    expect(JSON.stringify(got, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(created.secret);
    expect((await w.registries.updateRegistryToken({ ...base, id, description: "Deploys" })).token?.description).toBe(
      "Deploys",
    );
    expect((await failure(w.registries.updateRegistryToken({ ...base, id, description: " " }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await failure(w.registries.createRegistryToken({ ...base, actorId: w.mia, description: "x" }))).code).toBe(
      Code.PermissionDenied,
    );
    expect(
      (await failure(w.registries.listRegistryTokens({ organizationId: w.otherId, registry: "node-packages" })))
        .message,
    ).toBe("No registry found");
    expect((await failure(w.registries.getRegistryToken({ ...base, id: newId() }))).message).toBe("No token found");
    await w.registries.deleteRegistryToken({ ...base, id });
    expect((await w.registries.listRegistryTokens(base)).totalCount).toBe(0);
    expect(await w.registryRepo.findToken(registry?.id ?? "", id)).toBeNull();
  });
});
