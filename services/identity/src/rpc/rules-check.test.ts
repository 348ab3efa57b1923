import { newId } from "@conveyor/runtime";
import { world } from "../test-support.js";

describe("rules service: CheckRule", () => {
  it("allows what an unconditional rule of the type allows, in its direction and organization only", async () => {
    const w = await world();
    const [source, target, other] = [newId(), newId(), newId()];
    const type = "pipeline.artifacts_read.pipeline";
    const { rule } = await w.rules.createRule({
      organizationId: w.orgId,
      actorId: w.admin,
      type,
      sourceId: source,
      targetId: target,
    });
    const check = (over: Partial<{ organizationId: string; type: string; sourceId: string; targetId: string }>) =>
      w.rules.checkRule({ organizationId: w.orgId, type, sourceId: source, targetId: target, ...over });
    expect(await check({})).toMatchObject({ allowed: true, ruleId: rule?.id });
    expect(await check({ sourceId: source.toUpperCase() })).toMatchObject({ allowed: true });
    expect((await check({ sourceId: target, targetId: source })).allowed).toBe(false);
    expect((await check({ type: "pipeline.trigger_build.pipeline" })).allowed).toBe(false);
    expect((await check({ targetId: other })).allowed).toBe(false);
    expect((await check({ organizationId: w.otherId })).allowed).toBe(false);
    expect((await check({ sourceId: "not-a-uuid" })).allowed).toBe(false);
  });

  it("does not let a conditional rule allow anything", async () => {
    const w = await world();
    const [source, target] = [newId(), newId()];
    const type = "pipeline.artifacts_read.pipeline";
    await w.rules.createRule({
      organizationId: w.orgId,
      actorId: w.admin,
      type,
      sourceId: source,
      targetId: target,
      conditions: ["source.build.branch == 'main'"],
    });
    const res = await w.rules.checkRule({ organizationId: w.orgId, type, sourceId: source, targetId: target });
    expect(res).toMatchObject({ allowed: false, ruleId: "" });
  });
});
