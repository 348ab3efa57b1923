import { Type } from "@fastify/type-provider-typebox";

/**
 * The bounds the gateway puts on what requests carry, before any service reads them. They are the services' own
 * limits where those are fixed (slugs 100 characters, names 255, 20 tags), and elsewhere generous but finite: the
 * services judge the values in detail.
 */
export const BOUNDS = {
  /** Organization and pipeline slugs (docs/limits.md#pipelines-and-steps); a UUID fits too. */
  slug: 100,
  /** Record ids (UUIDs) and other identifiers in paths. */
  id: 100,
  name: 255,
  /** A repository URL, a branch, a commit, a branch filter pattern. */
  ref: 4096,
  /** Descriptions, messages and other free text. */
  text: 65_536,
  /** Pipeline YAML, as the builds service bounds an uploaded pipeline. */
  yaml: 1024 * 1024,
  /** Keys of env and meta-data objects. */
  key: 1024,
  /** Values of env and meta-data objects. */
  value: 100 * 1024,
  /** Entries of an env or meta-data object, items of a list. */
  entries: 1000,
  tags: 20,
} as const;

/** The largest 32-bit integer, the services' page and build number type. */
export const MAX_INT32 = 2 ** 31 - 1;

export const Slug = Type.String({ minLength: 1, maxLength: BOUNDS.slug });
export const Id = Type.String({ minLength: 1, maxLength: BOUNDS.id });
/** A build number: a positive 32-bit integer. */
export const BuildNumber = Type.Integer({ minimum: 1, maximum: MAX_INT32 });

export const OrgParams = Type.Object({ org: Slug });
export const PipelineParams = Type.Object({ org: Slug, pipeline: Slug });
export const BuildParams = Type.Object({ org: Slug, pipeline: Slug, number: BuildNumber });
export const JobParams = Type.Object({ org: Slug, pipeline: Slug, number: BuildNumber, job: Id });

/** A string of at most `max` characters. */
export const text = (max: number, options: { description?: string; minLength?: number } = {}) =>
  Type.String({ maxLength: max, ...options });

/** A string or null (null clears the attribute in an update). */
export const nullableText = (max: number) => Type.Union([text(max), Type.Null()]);

/** An object of string values with bounded keys and entries (env, meta-data). */
export const stringMap = (options: { description?: string } = {}) =>
  Type.Record(Type.String(), text(BOUNDS.value), {
    maxProperties: BOUNDS.entries,
    propertyNames: { maxLength: BOUNDS.key },
    ...options,
  });
