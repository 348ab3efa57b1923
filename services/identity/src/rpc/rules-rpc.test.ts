import { Code } from "@connectrpc/connect";
import { newId } from "@conveyor/runtime";
import { failure, world } from "../test-support.js";

describe("rules service", () => {
  it("creates, lists, gets and deletes rules; refuses unknown types, blanks and duplicates", async () => {
    const w = await world();
    const [a, b] = [newId(), newId()];
    const base = { organizationId: w.orgId, actorId: w.admin };
    const { rule } = await w.rules.createRule({
      ...base,
      type: "pipeline.trigger_build.pipeline",
      sourceId: a,
      targetId: b,
    });
    expect(rule).toMatchObject({
      type: "pipeline.trigger_build.pipeline",
      sourceType: "pipeline",
      action: "trigger_build",
      targetType: "pipeline",
      sourceId: a,
      targetId: b,
      effect: "allow",
      createdBy: { id: w.admin, name: "Ada" },
    });
    expect(
      await failure(w.rules.createRule({ ...base, type: "pipeline.trigger_build.pipeline", sourceId: a, targetId: b })),
    ).toMatchObject({ code: Code.FailedPrecondition, message: expect.stringContaining("already exists") });
    await w.rules.createRule({ ...base, type: "pipeline.artifacts_read.pipeline", sourceId: a, targetId: b });
    expect(
      (await failure(w.rules.createRule({ ...base, type: "pipeline.nope.pipeline", sourceId: a, targetId: b })))
        .message,
    ).toMatch(/^Rule type pipeline\.nope\.pipeline is not available/);
    expect(
      (
        await failure(
          w.rules.createRule({ ...base, type: "pipeline.trigger_build.pipeline", sourceId: "", targetId: b }),
        )
      ).message,
    ).toBe("Source pipeline can't be blank");
    expect(
      (
        await failure(
          w.rules.createRule({
            ...base,
            actorId: w.mia,
            type: "pipeline.trigger_build.pipeline",
            sourceId: b,
            targetId: a,
          }),
        )
      ).code,
    ).toBe(Code.PermissionDenied);
    const list = await w.rules.listRules({ organizationId: w.orgId });
    expect(list.rules.map((r) => r.action)).toEqual(["trigger_build", "artifacts_read"]);
    expect((await failure(w.rules.getRule({ organizationId: w.otherId, id: rule?.id ?? "" }))).message).toBe(
      "No rule found",
    );
    expect((await failure(w.rules.deleteRule({ ...base, actorId: w.mia, id: rule?.id ?? "" }))).code).toBe(
      Code.PermissionDenied,
    );
    await w.rules.deleteRule({ ...base, id: rule?.id ?? "" });
    expect((await w.rules.listRules({ organizationId: w.orgId })).totalCount).toBe(1);
  });
});
