import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BuildSchema } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { createPayloads } from "./payloads.js";

const ORG = "org-1";
const build = create(BuildSchema, { organizationId: ORG, pipelineId: "p-1", number: 3, state: "passed" });
const event = { type: "build" as const, kind: "build_finished", seq: 1, build, previousState: "running" };
const deps = (get: () => Promise<unknown>) =>
  ({
    identity: { getOrganization: async () => ({ organization: { slug: "acme" } }) },
    builds: { getBuild: async () => ({ build }) },
    pipelines: { get },
    publicUrl: "http://api.test",
    webUrl: "http://web.test",
  }) as never;

describe("webhook bodies", () => {
  it("carry the pipeline as REST renders it", async () => {
    const pipeline = create(PipelineSchema, { id: "p-1", organizationId: ORG, slug: "web", name: "Web" });
    const body = await createPayloads(deps(async () => ({ pipeline }))).body(event, "build.finished");
    expect(body?.pipeline).toMatchObject({ id: "p-1", slug: "web", name: "Web" });
  });

  it("say null for a deleted pipeline", async () => {
    const body = await createPayloads(deps(async () => null)).body(event, "build.finished");
    expect(body?.pipeline).toBeNull();
  });

  it("are not made without the pipeline when reading it failed: the event is handled again later", async () => {
    const failing = async () => {
      throw new ConnectError("pipelines unavailable", Code.Unavailable);
    };
    await expect(createPayloads(deps(failing)).body(event, "build.finished")).rejects.toThrow(/pipelines unavailable/);
  });
});
