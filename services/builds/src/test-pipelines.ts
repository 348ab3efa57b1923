/** Pipelines for the builds service's integration tests: as the pipelines service sends them, from YAML. */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { parsePipelineYaml } from "@conveyor/ci-rules";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages } from "@conveyor/runtime";

/** A pipeline of a new organization with the steps and env of `yaml`; `extra` overrides any field. */
export function pipelineFromYaml(
  yaml: string,
  extra: Omit<Partial<Pipeline>, "$typeName" | "$unknown"> = {},
): Pipeline {
  const parsed = parsePipelineYaml(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "app",
    name: "App",
    repository: "https://github.com/acme/app.git",
    defaultBranch: "main",
    steps: stepMessages(parsed.steps),
    configurationEnv: parsed.env,
    ...extra,
  });
}
