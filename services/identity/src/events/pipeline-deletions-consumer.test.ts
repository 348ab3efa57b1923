import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { encodeEvent, newId, SUBJECTS } from "@conveyor/runtime";
import { createMemoryRuleRepository } from "../store/memory-rule-repository.js";
import { createMemoryTeamRepository } from "../store/memory-team-repository.js";
import { pipelineDeletionHandler } from "./pipeline-deletions-consumer.js";

const at = new Date("2026-03-01T00:00:00Z");

/** A team given one pipeline and a rule from that pipeline, in memory. */
async function world() {
  const teams = createMemoryTeamRepository();
  const rules = createMemoryRuleRepository();
  const [organizationId, teamId, pipelineId] = [newId(), newId(), newId()];
  await teams.insertTeamPipeline({
    _id: newId(),
    teamId,
    organizationId,
    pipelineId,
    accessLevel: "read_only",
    createdAt: at,
  });
  await rules.insertRule({
    _id: newId(),
    organizationId,
    type: "pipeline.trigger_build.pipeline",
    sourceType: "pipeline",
    sourceId: pipelineId,
    action: "trigger_build",
    targetType: "pipeline",
    targetId: newId(),
    effect: "allow",
    conditions: [],
    createdAt: at,
    createdBy: "",
  });
  const warnings: string[] = [];
  const handle = pipelineDeletionHandler(
    { teams, rules },
    { warn: (_fields: unknown, msg?: string) => void warnings.push(msg ?? "") },
  );
  const left = async () => ({
    links: (await teams.listTeamPipelines(teamId, 0, 10)).total,
    rules: (await rules.listRules(organizationId, 0, 10)).total,
  });
  return { organizationId, pipelineId, handle, warnings, left };
}

const deleted = (init: { pipelineId?: string; organizationId?: string }) =>
  encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, init).data;

describe("identity's consumer of pipeline deletions", () => {
  it("drops the deleted pipeline's team associations and rules, and a redelivery is harmless", async () => {
    const w = await world();
    expect(await w.left()).toEqual({ links: 1, rules: 1 });
    await w.handle(deleted({ pipelineId: w.pipelineId, organizationId: w.organizationId }));
    expect(await w.left()).toEqual({ links: 0, rules: 0 });
    await w.handle(deleted({ pipelineId: w.pipelineId, organizationId: w.organizationId }));
    expect(w.warnings).toEqual([]);
  });

  it("logs and drops an event that names no pipeline", async () => {
    const w = await world();
    await w.handle(deleted({ organizationId: w.organizationId }));
    expect(w.warnings).toEqual(["pipeline_deleted event names no pipeline: dropped"]);
    expect(await w.left()).toEqual({ links: 1, rules: 1 });
  });
});
