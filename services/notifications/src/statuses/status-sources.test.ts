import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BuildSchema } from "@conveyor/proto/builds";
import { createPipelineCache } from "../cache/pipeline-cache.js";
import { createRpcStatusSources, type RpcStatusSourcesDeps } from "./status-sources.js";

const pipeline = {
  slug: "widgets",
  defaultBranch: "main",
  repository: "https://github.com/acme/widgets.git",
  provider: { settings: { publish_commit_status_per_step: true } },
  configuration: "notify:\n  - github_commit_status: {context: ci/x}\nsteps:\n  - command: x\n",
};

function setup() {
  const calls: string[] = [];
  let clock = 0;
  const deps = {
    connections: {
      list: async (org: string) => {
        calls.push(`connections ${org}`);
        return [];
      },
    },
    pipelines: createPipelineCache(
      {
        getPipeline: async (req: { pipeline: string }) => {
          calls.push(`pipeline ${req.pipeline}`);
          if (req.pipeline === "gone") throw new ConnectError("No pipeline found", Code.NotFound);
          if (req.pipeline === "broken") throw new ConnectError("down", Code.Unavailable);
          return { pipeline };
        },
      } as never,
      { ttlMs: 5_000, max: 100, now: () => clock },
    ),
    builds: {
      getBuild: async (req: { number: number }) => {
        if (req.number === 404) throw new ConnectError("No build found", Code.NotFound);
        return { build: create(BuildSchema, { number: req.number }) };
      },
    },
    identity: {
      getOrganization: async (req: { id: string }) => {
        calls.push(`organization ${req.id}`);
        return { organization: { slug: "acme" } };
      },
    },
    webBaseUrl: "http://ci.example.com/",
    now: () => clock,
  } as unknown as RpcStatusSourcesDeps;
  return { sources: createRpcStatusSources(deps), calls, tick: (ms: number) => (clock += ms) };
}

describe("the status sources over RPC", () => {
  it("reads a pipeline's slug, repository, settings and notify entries, kept a few seconds", async () => {
    const { sources, calls, tick } = setup();
    const read = await sources.pipeline("org-1", "p-1");
    expect(read).toMatchObject({
      slug: "widgets",
      defaultBranch: "main",
      repository: "https://github.com/acme/widgets.git",
      providerSettings: { publish_commit_status_per_step: true },
    });
    expect(read?.notify.build.map((n) => n.context)).toEqual(["ci/x"]);
    await sources.pipeline("org-1", "p-1");
    expect(calls.filter((c) => c === "pipeline p-1")).toHaveLength(1);
    tick(6_000);
    await sources.pipeline("org-1", "p-1");
    expect(calls.filter((c) => c === "pipeline p-1")).toHaveLength(2);
  });

  it("reads a pipeline or build that is gone as null, and lets other failures through (not kept)", async () => {
    const { sources, calls } = setup();
    expect(await sources.pipeline("org-1", "gone")).toBeNull();
    expect(await sources.build("p-1", 404)).toBeNull();
    await expect(sources.pipeline("org-1", "broken")).rejects.toThrow(/down/);
    await expect(sources.pipeline("org-1", "broken")).rejects.toThrow(/down/);
    expect(calls.filter((c) => c === "pipeline broken")).toHaveLength(2);
  });

  it("makes web_url from the base and the organization's slug, read once", async () => {
    const { sources, calls } = setup();
    expect(await sources.webUrl("org-1", "widgets", 7)).toBe("http://ci.example.com/acme/widgets/builds/7");
    expect(await sources.webUrl("org-1", "widgets", 8)).toBe("http://ci.example.com/acme/widgets/builds/8");
    expect(calls.filter((c) => c.startsWith("organization"))).toEqual(["organization org-1"]);
  });

  it("evaluates a notification's if: with the build's variables; one that cannot be evaluated is false", async () => {
    const { sources } = setup();
    const read = await sources.pipeline("org-1", "p-1");
    if (!read) throw new Error("no pipeline");
    const build = create(BuildSchema, {
      organizationId: "org-1",
      pipelineId: "p-1",
      branch: "main",
      state: "passed",
      source: "webhook",
      message: "Fix it",
      pullRequest: { id: "12", base: "main", labels: ["ci"] },
    });
    expect(await sources.conditionHolds(build, read, 'build.branch == "main"')).toBe(true);
    expect(await sources.conditionHolds(build, read, "build.branch == pipeline.default_branch")).toBe(true);
    expect(await sources.conditionHolds(build, read, 'build.pull_request.labels includes "ci"')).toBe(true);
    expect(await sources.conditionHolds(build, read, 'organization.slug == "acme"')).toBe(true);
    expect(await sources.conditionHolds(build, read, 'build.branch == "dev"')).toBe(false);
    expect(await sources.conditionHolds(build, read, 'build.state == "passed"')).toBe(true);
    expect(await sources.conditionHolds(build, read, "build.nope ==")).toBe(false);
  });
});
