import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Timestamp, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BUILD_STATES } from "@conveyor/ci-rules";
import type { ListBuildsRequestSchema } from "@conveyor/proto/builds";
import { Type } from "@fastify/type-provider-typebox";
import { HttpError } from "../errors/http-error.js";
import { BOUNDS, text } from "../route-declarations/params.js";
import { pagingProperties } from "./paging.js";

/**
 * A query string as the route's schema hands it over: repeated keys become arrays, and booleans and integers the
 * schema declares are already read.
 */
export type RawQuery = Record<string, string | string[] | boolean | number | undefined>;

/** The build states a list may filter by; `finished` stands for passed, failed, blocked and canceled. */
export const LIST_BUILD_STATES = [...BUILD_STATES, "finished"] as const;

/** The filters of the three build list routes, as ListBuildsRequest fields, plus what only the gateway uses. */
export interface BuildListQuery {
  filters: Pick<
    MessageInitShape<typeof ListBuildsRequestSchema>,
    | "branches"
    | "commits"
    | "createdFrom"
    | "createdTo"
    | "creatorId"
    | "finishedFrom"
    | "metaData"
    | "states"
    | "includeRetriedJobs"
    | "excludeJobs"
  >;
  /** Leave the embedded pipeline out (and skip looking it up). */
  excludePipeline: boolean;
}

const many = (max: number) =>
  Type.Optional(Type.Union([text(max), Type.Array(text(max), { maxItems: BOUNDS.entries })]));
const manyBracketed = (max: number) => Type.Optional(Type.Array(text(max), { maxItems: BOUNDS.entries }));
const time = (description: string) => Type.Optional(text(64, { description: `ISO 8601 time: ${description}` }));
const flagParam = (description: string) => Type.Optional(Type.Boolean({ description }));

/**
 * The query string of the three build lists (docs/compatibility.md#pagination): filters, each as go-buildkite
 * sends it (`state[]`, `branch[]`, `meta_data[key]=value`), and paging. States are also taken comma-separated, so
 * their values are judged by parseStates with Buildkite's message.
 */
export const BuildListQuerySchema = Type.Object(
  {
    ...pagingProperties,
    branch: many(BOUNDS.ref),
    "branch[]": manyBracketed(BOUNDS.ref),
    commit: many(BOUNDS.ref),
    "commit[]": manyBracketed(BOUNDS.ref),
    created_from: time("builds created on or after"),
    created_to: time("builds created before"),
    finished_from: time("builds finished on or after"),
    creator: Type.Optional(text(BOUNDS.id, { description: "a user UUID" })),
    state: many(1024),
    "state[]": manyBracketed(64),
    include_retried_jobs: flagParam("list every retried job"),
    exclude_jobs: flagParam("leave jobs out"),
    exclude_pipeline: flagParam("leave the pipeline out"),
  },
  { patternProperties: { "^meta_data\\[.+\\]$": Type.Union([text(BOUNDS.value), Type.Array(text(BOUNDS.value))]) } },
);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * ISO 8601 dates and times: a date, or a date and time (minutes, seconds and fractions optional) with an optional
 * zone. A `+` of an offset written unencoded in a query string arrives as a space, which is read back as `+`.
 */
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+\- ]\d{2}(?::?\d{2})?)?)?$/i;

/** Every value given for `name` and for `name[]`, in order, without empty strings. */
function values(query: RawQuery, name: string): string[] {
  return [query[name], query[`${name}[]`]].flat().filter((v): v is string => typeof v === "string" && v !== "");
}

/** A boolean parameter, read by the route's schema or (given as text) here. */
function flag(query: RawQuery, name: string): boolean {
  const v = query[name];
  return typeof v === "boolean" ? v : parseBoolean(name, single(query, name));
}

/** The one value of a scalar parameter; given more than once is a 400. */
function single(query: RawQuery, name: string): string | undefined {
  const v = query[name];
  if (Array.isArray(v)) throw new HttpError(400, `${name} may be given only once`);
  return typeof v !== "string" || v === "" ? undefined : v;
}

/** Parses an ISO 8601 time of a filter; anything else is a 400 naming the parameter. */
export function parseIsoTime(name: string, raw: string): Timestamp {
  const bad = () => new HttpError(400, `${name} must be an ISO 8601 time such as 2025-01-08T23:22:05Z, got "${raw}"`);
  const m = ISO_8601.exec(raw.trim());
  if (!m) throw bad();
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zoneRaw = "Z"] = m;
  const zone = zoneRaw.toUpperCase() === "Z" ? "Z" : normalizeOffset(zoneRaw);
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59)
    throw bad();
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (Number(d) > daysInMonth) throw bad();
  const ms = frac.padEnd(3, "0").slice(0, 3);
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${zone}`);
  if (Number.isNaN(date.getTime())) throw bad();
  return timestampFromDate(date);
}

function normalizeOffset(raw: string): string {
  const sign = raw[0] === "-" ? "-" : "+";
  const digits = raw.slice(1).replace(":", "");
  return `${sign}${digits.slice(0, 2)}:${digits.slice(2, 4) || "00"}`;
}

/** Parses a boolean parameter: true/false (also 1/0); absent or empty is false; anything else is a 400. */
export function parseBoolean(name: string, raw: string | undefined): boolean {
  if (raw === undefined || raw === "") return false;
  const v = raw.toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  throw new HttpError(400, `${name} must be true or false, got "${raw}"`);
}

/** The `state`/`state[]` filter (a comma-separated list is accepted too), validated against the list states. */
export function parseStates(query: RawQuery): string[] {
  const states = values(query, "state")
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
  const invalid = states.filter((s) => !(LIST_BUILD_STATES as readonly string[]).includes(s));
  if (invalid.length > 0) {
    throw new HttpError(
      400,
      `Invalid states: ${invalid.join(", ")}. Valid states are ${LIST_BUILD_STATES.join(", ")}.`,
    );
  }
  return [...new Set(states)];
}

/** The `meta_data[key]=value` filters; a repeated key keeps its last value. */
export function parseMetaData(query: RawQuery): Record<string, string> {
  const metaData: Record<string, string> = {};
  for (const [key, raw] of Object.entries(query)) {
    if (key === "meta_data" || key === "meta_data[]") {
      throw new HttpError(400, "meta_data must be given as meta_data[<key>]=<value>");
    }
    const m = /^meta_data\[(.+)\]$/.exec(key);
    if (!m?.[1] || raw === undefined) continue;
    const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    metaData[m[1]] = String(value ?? "");
  }
  return metaData;
}

/**
 * Parses the query string of the build list routes: `branch`/`branch[]`, `commit`/`commit[]`, `created_from`,
 * `created_to`, `finished_from` (ISO 8601), `creator` (a user UUID), `meta_data[k]=v`, `state`/`state[]`,
 * `include_retried_jobs`, `exclude_jobs` and `exclude_pipeline`. Invalid values are 400s with a clear message.
 * Paging is read by pageOf (paging.ts).
 */
export function parseBuildListQuery(query: RawQuery): BuildListQuery {
  const time = (name: string) => {
    const raw = single(query, name);
    return raw === undefined ? undefined : parseIsoTime(name, raw);
  };
  const creator = single(query, "creator");
  if (creator !== undefined && !UUID.test(creator)) {
    throw new HttpError(400, `creator must be a user UUID, got "${creator}"`);
  }
  const filters: BuildListQuery["filters"] = {
    branches: [...new Set(values(query, "branch"))],
    commits: [...new Set(values(query, "commit"))],
    createdFrom: time("created_from"),
    createdTo: time("created_to"),
    finishedFrom: time("finished_from"),
    creatorId: creator?.toLowerCase() ?? "",
    metaData: parseMetaData(query),
    states: parseStates(query),
    includeRetriedJobs: flag(query, "include_retried_jobs"),
    excludeJobs: flag(query, "exclude_jobs"),
  };
  for (const key of ["createdFrom", "createdTo", "finishedFrom"] as const) {
    if (filters[key] === undefined) delete filters[key];
  }
  return { filters, excludePipeline: flag(query, "exclude_pipeline") };
}
