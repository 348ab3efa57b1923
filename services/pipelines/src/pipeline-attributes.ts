import type { JsonObject } from "@bufbuild/protobuf";
import {
  branchFilterProblem,
  type PipelineStep,
  parsePipelineYaml,
  parseVisualSteps,
  stepsToYaml,
} from "@conveyor/ci-rules";
import type { PipelineAttributes } from "@conveyor/proto/pipelines";
import { isUuid } from "@conveyor/runtime";
import type { PipelineChanges, PipelineDoc } from "./pipelines-repository.js";
import { checkProviderSettings, defaultProviderSettings, providerIdFor } from "./provider.js";
import { derivePipelineSlug, pipelineSlugProblem } from "./slug.js";

export interface FieldProblem {
  field: string;
  code: string;
}

/** What the attributes of a create or update request come to: the changes to store, or why they cannot be. */
export interface ResolvedAttributes {
  changes: PipelineChanges;
  errors: FieldProblem[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_NAME = 255;
const MAX_TAGS = 20;

/** Converts a JSON env object into string values, reporting keys and values that are not acceptable. */
function checkEnv(env: JsonObject, field: string, errors: FieldProblem[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (!ENV_NAME.test(key))
      errors.push({ field: `${field}.${key}`, code: "is not a valid environment variable name" });
    else if (typeof value !== "string") errors.push({ field: `${field}.${key}`, code: "must be a string" });
    else out[key] = value;
  }
  return out;
}

/** A branch filter attribute: "" clears it; otherwise the pattern must be valid. */
function filterValue(value: string, field: string, errors: FieldProblem[]): string | null {
  const trimmed = value.trim();
  if (trimmed === "") return null;
  const problem = branchFilterProblem(trimmed);
  if (problem) errors.push({ field, code: problem });
  return trimmed;
}

/**
 * Resolves the attributes of a create (current undefined) or an update (current given) into the changes to store.
 * Only attributes present in the request change; a present attribute with an empty value clears it where that is
 * meaningful (description, filters, template, cluster, tags) and is an error where it is not (name, repository).
 * The cluster's existence and name/slug uniqueness need I/O and are checked by the service.
 */
export function resolveAttributes(attrs: PipelineAttributes, current?: PipelineDoc): ResolvedAttributes {
  const creating = current === undefined;
  const errors: FieldProblem[] = [];
  const changes: ResolvedAttributes["changes"] = {};

  if (attrs.name !== undefined || creating) {
    const name = (attrs.name ?? "").trim();
    if (name === "") errors.push({ field: "name", code: "can't be blank" });
    else if (name.length > MAX_NAME)
      errors.push({ field: "name", code: `is too long (maximum is ${MAX_NAME} characters)` });
    else {
      changes.name = name;
      changes.nameKey = name.toLowerCase();
    }
  }

  const slugGiven = attrs.slug !== undefined && attrs.slug.trim() !== "";
  if (slugGiven) {
    const slug = (attrs.slug ?? "").trim();
    const problem = pipelineSlugProblem(slug);
    if (problem) errors.push({ field: "slug", code: problem });
    else changes.slug = slug.toLowerCase();
  } else if (changes.name !== undefined && (creating || attrs.name !== undefined || attrs.slug !== undefined)) {
    const derived = derivePipelineSlug(changes.name);
    if (pipelineSlugProblem(derived)) {
      errors.push({ field: "slug", code: `could not be derived from the name "${changes.name}": give a slug` });
    } else changes.slug = derived;
  }

  if (attrs.description !== undefined) changes.description = attrs.description.trim() === "" ? null : attrs.description;

  if (attrs.repository !== undefined || creating) {
    const repository = (attrs.repository ?? "").trim();
    if (repository === "") errors.push({ field: "repository", code: "can't be blank" });
    else changes.repository = repository;
  }

  if (attrs.pipelineTemplateUuid !== undefined) {
    const uuid = attrs.pipelineTemplateUuid.trim();
    if (uuid !== "" && !isUuid(uuid)) errors.push({ field: "pipeline_template_uuid", code: "must be a UUID" });
    changes.pipelineTemplateUuid = uuid === "" ? null : uuid;
  }

  if (attrs.branchConfiguration !== undefined) {
    changes.branchConfiguration = filterValue(attrs.branchConfiguration, "branch_configuration", errors);
  }
  if (attrs.skipQueuedBranchBuildsFilter !== undefined) {
    changes.skipQueuedBranchBuildsFilter = filterValue(
      attrs.skipQueuedBranchBuildsFilter,
      "skip_queued_branch_builds_filter",
      errors,
    );
  }
  if (attrs.cancelRunningBranchBuildsFilter !== undefined) {
    changes.cancelRunningBranchBuildsFilter = filterValue(
      attrs.cancelRunningBranchBuildsFilter,
      "cancel_running_branch_builds_filter",
      errors,
    );
  }
  if (attrs.defaultBranch !== undefined) changes.defaultBranch = attrs.defaultBranch.trim();
  if (attrs.skipQueuedBranchBuilds !== undefined) changes.skipQueuedBranchBuilds = attrs.skipQueuedBranchBuilds;
  if (attrs.cancelRunningBranchBuilds !== undefined)
    changes.cancelRunningBranchBuilds = attrs.cancelRunningBranchBuilds;
  if (attrs.allowRebuilds !== undefined) changes.allowRebuilds = attrs.allowRebuilds;

  if (attrs.env !== undefined) changes.env = checkEnv(attrs.env, "env", errors);

  if (attrs.visibility !== undefined) {
    if (attrs.visibility === "private" || attrs.visibility === "public") changes.visibility = attrs.visibility;
    else errors.push({ field: "visibility", code: `must be private or public, got "${attrs.visibility}"` });
  }

  if (attrs.tags !== undefined) {
    const tags = attrs.tags.values.map((t) => t.trim());
    if (tags.some((t) => t === "")) errors.push({ field: "tags", code: "can't contain blank tags" });
    else if (tags.length > MAX_TAGS) errors.push({ field: "tags", code: `can't have more than ${MAX_TAGS} tags` });
    changes.tags = tags.length === 0 ? null : [...new Set(tags)];
  }

  // Provider: derived from the repository, with settings merged over the current (or default) ones.
  const repository = changes.repository ?? current?.repository;
  if (repository && (changes.repository !== undefined || attrs.providerSettings !== undefined)) {
    const id = providerIdFor(repository);
    const base =
      current && current.provider.id === id ? current.provider.settings : defaultProviderSettings(id, repository);
    const given = checkProviderSettings(attrs.providerSettings ?? {});
    for (const [key, code] of given.problems) errors.push({ field: `provider_settings.${key}`, code });
    changes.provider = {
      id,
      settings: { ...base, ...given.settings },
      webhookToken: current?.provider.webhookToken ?? "",
    };
  }

  resolveSteps(attrs, creating, changes, errors);
  return { changes, errors };
}

function resolveSteps(
  attrs: PipelineAttributes,
  creating: boolean,
  changes: ResolvedAttributes["changes"],
  errors: FieldProblem[],
) {
  const hasYaml = attrs.configuration !== undefined;
  const hasVisual = attrs.visual !== undefined;
  if (hasYaml && hasVisual) {
    errors.push({ field: "configuration", code: "give either configuration (YAML) or steps (visual), not both" });
    return;
  }
  if (hasYaml) {
    const parsed = parsePipelineYaml(attrs.configuration ?? "");
    if (!parsed.ok) errors.push(...parsed.errors);
    else {
      changes.configuration = attrs.configuration ?? "";
      changes.definitionJson = definitionJson(parsed.steps, parsed.env);
    }
  } else if (hasVisual) {
    const parsed = parseVisualSteps(attrs.visual?.steps);
    if (!parsed.ok) errors.push(...parsed.errors);
    else {
      changes.configuration = stepsToYaml(parsed.steps, parsed.env);
      changes.definitionJson = definitionJson(parsed.steps, parsed.env);
    }
  } else if (creating) {
    errors.push({
      field: "configuration",
      code: "Step configuration is missing: give configuration (pipeline YAML with a top-level steps: list) or steps (the visual form)",
    });
  }
}

/** The stored form of a parsed definition. */
export function definitionJson(steps: PipelineStep[], env: Record<string, string>): string {
  return JSON.stringify({ steps, env });
}
