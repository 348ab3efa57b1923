import { create } from "@bufbuild/protobuf";
import { type PipelineAttributes, PipelineAttributesSchema } from "@conveyor/proto/pipelines";
import type { PipelineDoc } from "../store/pipelines-repository.js";
import { resolveAttributes } from "./pipeline-attributes.js";

const attrs = (init: Parameters<typeof create<typeof PipelineAttributesSchema>>[1]): PipelineAttributes =>
  create(PipelineAttributesSchema, init);
const fieldsOf = (a: PipelineAttributes, current?: PipelineDoc) =>
  resolveAttributes(a, current).errors.map((e) => e.field);
const YAML = "steps:\n  - command: make\n";

const current: PipelineDoc = {
  _id: "p",
  organizationId: "o",
  slug: "web-app",
  name: "Web App",
  nameKey: "web app",
  description: "words",
  repository: "git@github.com:acme/web.git",
  clusterId: "c",
  pipelineTemplateUuid: null,
  branchConfiguration: "main",
  defaultBranch: "main",
  provider: { id: "github", settings: { trigger_mode: "code", build_tags: false }, webhookToken: "w" },
  skipQueuedBranchBuilds: false,
  skipQueuedBranchBuildsFilter: null,
  cancelRunningBranchBuilds: false,
  cancelRunningBranchBuildsFilter: null,
  allowRebuilds: true,
  createdBy: { id: "u", name: "U", email: "u@x", avatarUrl: null, createdAt: null },
  createdAt: new Date(),
  updatedAt: new Date(),
  archivedAt: null,
  env: {},
  visibility: "private",
  tags: ["a"],
  configuration: YAML,
  definitionJson: "{}",
  counts: { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 },
  teams: {},
  badgeToken: "b",
};

describe("resolveAttributes on create", () => {
  it("requires name, repository and steps, and derives the slug", () => {
    expect(fieldsOf(attrs({}))).toEqual(["name", "repository", "configuration"]);
    const { changes, errors } = resolveAttributes(attrs({ name: "My  App", repository: "r", configuration: YAML }));
    expect(errors).toEqual([]);
    expect(changes).toMatchObject({
      name: "My  App",
      nameKey: "my  app",
      slug: "my-app",
      repository: "r",
      configuration: YAML,
    });
    expect(JSON.parse(changes.definitionJson ?? "").steps[0]).toMatchObject({ type: "script", command: "make" });
  });

  it("reports a name no slug can be derived from on the slug", () => {
    expect(fieldsOf(attrs({ name: "!!!", repository: "r", configuration: YAML }))).toEqual(["slug"]);
  });

  it("checks slug, visibility, template, env, tags, filters and provider settings", () => {
    const bad = attrs({
      name: "x",
      repository: "r",
      configuration: YAML,
      slug: "-bad",
      visibility: "internal",
      pipelineTemplateUuid: "nope",
      env: { "1BAD": "x", GOOD: 1 },
      tags: { values: ["ok", " "] },
      branchConfiguration: "!",
      providerSettings: { build_tags: "yes" },
    });
    expect(fieldsOf(bad).sort()).toEqual(
      [
        "branch_configuration",
        "env.1BAD",
        "env.GOOD",
        "pipeline_template_uuid",
        "provider_settings.build_tags",
        "slug",
        "tags",
        "visibility",
      ].sort(),
    );
  });

  it("turns visual steps into YAML that says the same", () => {
    const { changes, errors } = resolveAttributes(
      attrs({
        name: "v",
        repository: "r",
        visual: { steps: [{ type: "script", name: "Build", command: "make build" }] },
      }),
    );
    expect(errors).toEqual([]);
    expect(changes.configuration).toContain("make build");
  });

  it("refuses both forms at once and passes YAML errors through", () => {
    expect(fieldsOf(attrs({ name: "v", repository: "r", configuration: YAML, visual: { steps: [] } }))).toEqual([
      "configuration",
    ]);
    expect(fieldsOf(attrs({ name: "v", repository: "r", configuration: "steps: [" }))).toEqual(["configuration"]);
  });

  it("derives the provider and its default settings from the repository", () => {
    const { changes } = resolveAttributes(
      attrs({ name: "x", repository: "https://gitlab.com/a/b.git", configuration: YAML }),
    );
    expect(changes.provider).toMatchObject({ id: "gitlab", settings: { trigger_mode: "code", repository: "a/b" } });
  });
});

describe("resolveAttributes on update", () => {
  it("changes only what is present", () => {
    const { changes, errors } = resolveAttributes(attrs({ description: "new" }), current);
    expect(errors).toEqual([]);
    expect(changes).toEqual({ description: "new" });
  });

  it("clears on empty values", () => {
    const { changes } = resolveAttributes(
      attrs({ description: "", branchConfiguration: "", pipelineTemplateUuid: "", tags: { values: [] } }),
      current,
    );
    expect(changes).toEqual({ description: null, branchConfiguration: null, pipelineTemplateUuid: null, tags: null });
  });

  it("regenerates the slug from a new name unless a slug is given", () => {
    expect(resolveAttributes(attrs({ name: "Brand New" }), current).changes.slug).toBe("brand-new");
    expect(resolveAttributes(attrs({ name: "Brand New", slug: "kept" }), current).changes.slug).toBe("kept");
  });

  it("refuses blanking what cannot be blank", () => {
    expect(fieldsOf(attrs({ name: " ", repository: "" }), current)).toEqual(["name", "repository"]);
  });

  it("sets, keeps and removes the webhook secret, carrying the webhook token and its hash over", () => {
    const hooked: PipelineDoc = {
      ...current,
      provider: { ...current.provider, webhookTokenHash: "h", webhookSecret: "old secret" },
    };
    const set = resolveAttributes(attrs({ webhookSecret: "  s3cret  " }), hooked);
    expect(set.errors).toEqual([]);
    expect(set.changes.provider).toEqual({ ...hooked.provider, webhookSecret: "s3cret" });
    const kept = resolveAttributes(attrs({ providerSettings: { build_tags: true } }), hooked).changes.provider;
    expect(kept).toMatchObject({ webhookToken: "w", webhookTokenHash: "h", webhookSecret: "old secret" });
    expect(resolveAttributes(attrs({ webhookSecret: " " }), hooked).changes.provider?.webhookSecret).toBe("");
    expect(fieldsOf(attrs({ webhookSecret: "a\u0007b" }), hooked)).toEqual(["webhook_secret"]);
    expect(fieldsOf(attrs({ webhookSecret: "x".repeat(256) }), hooked)).toEqual(["webhook_secret"]);
  });

  it("merges provider settings over the current ones", () => {
    const { changes } = resolveAttributes(attrs({ providerSettings: { build_tags: true } }), current);
    expect(changes.provider).toEqual({
      id: "github",
      settings: { trigger_mode: "code", build_tags: true },
      webhookToken: "w",
    });
  });
});
