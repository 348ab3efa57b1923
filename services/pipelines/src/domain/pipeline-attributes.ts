import type { JsonObject } from "@bufbuild/protobuf";
import {
  branchFilterProblem,
  type PipelineStep,
  parsePipelineYaml,
  parseVisualSteps,
  stepCountProblems,
  stepsToYaml,
} from "@conveyor/ci-rules";
import type { PipelineAttributes } from "@conveyor/proto/pipelines";
import { envProblems, isUuid, TEXT_LIMITS, type TextRule, textProblem } from "@conveyor/runtime";
import type { PipelineChanges, PipelineDoc } from "../store/pipelines-repository.js";
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

const MAX_NAME = TEXT_LIMITS.name;
const MAX_TAGS = 20;
/** The longest timeout a pipeline may set: a week. */
const MAX_TIMEOUT_MINUTES = 7 * 24 * 60;
/**
 * The largest stored configuration: every pipeline list answer carries up to 100 of them (and their steps), so it is
 * well below what one upload may send (1 MiB); larger pipelines are uploaded by a step (`pipeline upload`).
 */
export const MAX_CONFIGURATION_BYTES = 256 * 1024;
/** The largest stored definition (the parsed steps as JSON): aliases can make it larger than the YAML. */
const MAX_DEFINITION_BYTES = 1024 * 1024;

/** Converts a JSON env object into string values, reporting keys and values that are not acceptable. */
function checkEnv(env: JsonObject, field: string, errors: FieldProblem[]): Record<string, string> {
  const problems = envProblems(env, field);
  errors.push(...problems);
  return problems.length > 0 ? {} : (env as Record<string, string>);
}

/** Records a text attribute's problem (too long, control characters) on `field`; true when it is fine. */
function checkText(value: string, field: string, rule: TextRule, errors: FieldProblem[]): boolean {
  const problem = textProblem(value, rule);
  if (problem) errors.push({ field, code: problem });
  return problem === null;
}

/** The longest webhook secret (characters): forges allow far less, and it is compared on every delivery. */
const MAX_WEBHOOK_SECRET = 255;

/** A webhook secret attribute: "" (or blanks) removes it; otherwise one line of printable text. */
function webhookSecretValue(value: string, errors: FieldProblem[]): string {
  const trimmed = value.trim();
  if (trimmed !== "") checkText(trimmed, "webhook_secret", { max: MAX_WEBHOOK_SECRET }, errors);
  return trimmed;
}

/** A branch filter attribute: "" clears it; otherwise the pattern must be valid. */
function filterValue(value: string, field: string, errors: FieldProblem[]): string | null {
  const trimmed = value.trim();
  if (trimmed === "") return null;
  if (!checkText(trimmed, field, { max: TEXT_LIMITS.branchFilter }, errors)) return trimmed;
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
    else if (checkText(name, "name", { max: MAX_NAME }, errors)) {
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

  if (attrs.description !== undefined) {
    checkText(attrs.description, "description", { max: TEXT_LIMITS.description, multiline: true }, errors);
    changes.description = attrs.description.trim() === "" ? null : attrs.description;
  }

  if (attrs.repository !== undefined || creating) {
    const repository = (attrs.repository ?? "").trim();
    if (repository === "") errors.push({ field: "repository", code: "can't be blank" });
    else if (checkText(repository, "repository", { max: TEXT_LIMITS.repository }, errors))
      changes.repository = repository;
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
  if (attrs.defaultBranch !== undefined) {
    changes.defaultBranch = attrs.defaultBranch.trim();
    checkText(changes.defaultBranch, "default_branch", { max: TEXT_LIMITS.branch }, errors);
  }
  if (attrs.skipQueuedBranchBuilds !== undefined) changes.skipQueuedBranchBuilds = attrs.skipQueuedBranchBuilds;
  if (attrs.cancelRunningBranchBuilds !== undefined)
    changes.cancelRunningBranchBuilds = attrs.cancelRunningBranchBuilds;
  if (attrs.allowRebuilds !== undefined) changes.allowRebuilds = attrs.allowRebuilds;

  if (attrs.env !== undefined) changes.env = checkEnv(attrs.env, "env", errors);

  for (const [given, field, key] of [
    [attrs.defaultTimeoutInMinutes, "default_timeout_in_minutes", "defaultCommandStepTimeout"],
    [attrs.maximumTimeoutInMinutes, "maximum_timeout_in_minutes", "maximumCommandStepTimeout"],
  ] as const) {
    if (given === undefined) continue;
    if (!Number.isInteger(given) || given < 0 || given > MAX_TIMEOUT_MINUTES)
      errors.push({ field, code: `must be a whole number of minutes from 1 to ${MAX_TIMEOUT_MINUTES} (0 clears it)` });
    else changes[key] = given === 0 ? null : given;
  }

  if (attrs.visibility !== undefined) {
    if (attrs.visibility === "private" || attrs.visibility === "public") changes.visibility = attrs.visibility;
    else errors.push({ field: "visibility", code: `must be private or public, got "${attrs.visibility}"` });
  }

  if (attrs.tags !== undefined) {
    const tags = attrs.tags.values.map((t) => t.trim());
    if (tags.some((t) => t === "")) errors.push({ field: "tags", code: "can't contain blank tags" });
    else if (tags.length > MAX_TAGS) errors.push({ field: "tags", code: `can't have more than ${MAX_TAGS} tags` });
    else for (const tag of tags) if (!checkText(tag, "tags", { max: MAX_NAME }, errors)) break;
    changes.tags = tags.length === 0 ? null : [...new Set(tags)];
  }

  // Provider: derived from the repository, with settings merged over the current (or default) ones. The provider is
  // stored whole, so what the request does not change (the webhook token, its hash, the secret) is carried over.
  const repository = changes.repository ?? current?.repository;
  const webhookSecret = attrs.webhookSecret === undefined ? undefined : webhookSecretValue(attrs.webhookSecret, errors);
  if (
    repository &&
    (changes.repository !== undefined || attrs.providerSettings !== undefined || webhookSecret !== undefined)
  ) {
    const id = providerIdFor(repository);
    const base =
      current && current.provider.id === id ? current.provider.settings : defaultProviderSettings(id, repository);
    const given = checkProviderSettings(attrs.providerSettings ?? {});
    for (const [key, code] of given.problems) errors.push({ field: `provider_settings.${key}`, code });
    changes.provider = {
      ...current?.provider,
      id,
      settings: { ...base, ...given.settings },
      webhookToken: current?.provider.webhookToken ?? "",
      ...(webhookSecret !== undefined ? { webhookSecret } : {}),
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
    const configuration = attrs.configuration ?? "";
    if (Buffer.byteLength(configuration, "utf8") > MAX_CONFIGURATION_BYTES) {
      errors.push({
        field: "configuration",
        code: `is too large (maximum is ${MAX_CONFIGURATION_BYTES} bytes; larger pipelines can be uploaded by a step with buildkite-agent pipeline upload)`,
      });
      return;
    }
    const parsed = parsePipelineYaml(configuration);
    if (!parsed.ok) errors.push(...parsed.errors);
    else store(parsed.steps, parsed.env, configuration, "configuration", changes, errors);
  } else if (hasVisual) {
    const parsed = parseVisualSteps(attrs.visual?.steps);
    if (!parsed.ok) errors.push(...parsed.errors);
    else store(parsed.steps, parsed.env, stepsToYaml(parsed.steps, parsed.env), "steps", changes, errors);
  } else if (creating) {
    errors.push({
      field: "configuration",
      code: "Step configuration is missing: give configuration (pipeline YAML with a top-level steps: list) or steps (the visual form)",
    });
  }
}

/** Records a parsed definition in the changes, when it is within the bounds of a pipeline. */
function store(
  steps: PipelineStep[],
  env: Record<string, string>,
  configuration: string,
  field: string,
  changes: ResolvedAttributes["changes"],
  errors: FieldProblem[],
) {
  const problems = [...stepCountProblems(steps, field), ...envProblems(env, `${field}.env`, { names: "any" })];
  if (problems.length > 0) {
    errors.push(...problems);
    return;
  }
  const json = definitionJson(steps, env);
  if (Buffer.byteLength(configuration, "utf8") > MAX_CONFIGURATION_BYTES || json.length > MAX_DEFINITION_BYTES) {
    errors.push({ field, code: `is too large once its steps are expanded (maximum is ${MAX_DEFINITION_BYTES} bytes)` });
    return;
  }
  changes.configuration = configuration;
  changes.definitionJson = json;
}

/** The stored form of a parsed definition. */
export function definitionJson(steps: PipelineStep[], env: Record<string, string>): string {
  return JSON.stringify({ steps, env });
}
