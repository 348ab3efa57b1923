import { timestampDate } from "@bufbuild/protobuf/wkt";
import { HttpError } from "../errors/http-error.js";
import { LIST_BUILD_STATES, parseBoolean, parseBuildListQuery, parseIsoTime, type RawQuery } from "./build-query.js";

const iso = (name: string, raw: string) => timestampDate(parseIsoTime(name, raw)).toISOString();

function error400(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).statusCode).toBe(400);
    return (err as HttpError).message;
  }
  throw new Error("expected a 400");
}

describe("parseBuildListQuery", () => {
  it("leaves every filter empty for an empty query", () => {
    expect(parseBuildListQuery({})).toEqual({
      filters: {
        branches: [],
        commits: [],
        creatorId: "",
        metaData: {},
        states: [],
        includeRetriedJobs: false,
        excludeJobs: false,
      },
      excludePipeline: false,
    });
  });

  it("reads branch and commit as a single value, repeated values, and the [] form together", () => {
    const q: RawQuery = {
      branch: "main",
      "branch[]": ["feature/x", "main", "release-*"],
      commit: ["a".repeat(40), "b".repeat(40)],
      "commit[]": "c".repeat(40),
    };
    const { filters } = parseBuildListQuery(q);
    expect(filters.branches).toEqual(["main", "feature/x", "release-*"]);
    expect(filters.commits).toEqual(["a".repeat(40), "b".repeat(40), "c".repeat(40)]);
  });

  it("ignores empty branch and commit values", () => {
    expect(parseBuildListQuery({ branch: "", "commit[]": ["", ""] }).filters).toMatchObject({
      branches: [],
      commits: [],
    });
  });

  it("reads the time filters as timestamps", () => {
    const { filters } = parseBuildListQuery({
      created_from: "2025-01-08T23:22:05Z",
      created_to: "2025-01-09T00:00:00.123Z",
      finished_from: "2025-01-08",
    });
    expect(timestampDate(filters.createdFrom as never).toISOString()).toBe("2025-01-08T23:22:05.000Z");
    expect(timestampDate(filters.createdTo as never).toISOString()).toBe("2025-01-09T00:00:00.123Z");
    expect(timestampDate(filters.finishedFrom as never).toISOString()).toBe("2025-01-08T00:00:00.000Z");
  });

  it("reads creator as a user UUID and rejects anything else", () => {
    const id = "11111111-0000-4000-8000-00000000000A";
    expect(parseBuildListQuery({ creator: id }).filters.creatorId).toBe(id.toLowerCase());
    expect(error400(() => parseBuildListQuery({ creator: "bob" }))).toBe('creator must be a user UUID, got "bob"');
  });

  it("reads every meta_data[key]=value pair", () => {
    const { filters } = parseBuildListQuery({
      "meta_data[release]": "v1",
      "meta_data[team.name]": "web app",
      "meta_data[empty]": "",
      "meta_data[twice]": ["a", "b"],
      other: "x",
    });
    expect(filters.metaData).toEqual({ release: "v1", "team.name": "web app", empty: "", twice: "b" });
  });

  it("refuses meta_data without a key", () => {
    expect(error400(() => parseBuildListQuery({ meta_data: "x" }))).toMatch(/meta_data\[<key>\]=<value>/);
  });

  it("reads state, state[] and comma-separated states, including finished", () => {
    expect(parseBuildListQuery({ state: "running" }).filters.states).toEqual(["running"]);
    expect(parseBuildListQuery({ "state[]": ["passed", "failed"], state: "finished" }).filters.states).toEqual([
      "finished",
      "passed",
      "failed",
    ]);
    expect(parseBuildListQuery({ state: "scheduled,canceled" }).filters.states).toEqual(["scheduled", "canceled"]);
    for (const state of LIST_BUILD_STATES) expect(parseBuildListQuery({ state }).filters.states).toEqual([state]);
  });

  it("answers 400 naming the invalid states and listing the valid ones", () => {
    expect(error400(() => parseBuildListQuery({ "state[]": ["passed", "bogus", "done"] }))).toBe(
      "Invalid states: bogus, done. Valid states are scheduled, running, passed, failing, failed, " +
        "blocked, canceling, canceled, skipped, not_run, finished.",
    );
  });

  it("reads the boolean switches", () => {
    const q = parseBuildListQuery({ include_retried_jobs: "true", exclude_jobs: "true", exclude_pipeline: "true" });
    expect(q.filters.includeRetriedJobs).toBe(true);
    expect(q.filters.excludeJobs).toBe(true);
    expect(q.excludePipeline).toBe(true);
    const off = parseBuildListQuery({ include_retried_jobs: "false", exclude_jobs: "0", exclude_pipeline: "" });
    expect([off.filters.includeRetriedJobs, off.filters.excludeJobs, off.excludePipeline]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it.each([
    ["exclude_jobs", "yes"],
    ["exclude_pipeline", "2"],
    ["include_retried_jobs", "TRUEISH"],
  ])("answers 400 for %s=%s", (name, value) => {
    expect(error400(() => parseBuildListQuery({ [name]: value }))).toBe(
      `${name} must be true or false, got "${value}"`,
    );
  });

  it("answers 400 for a scalar parameter given twice", () => {
    expect(error400(() => parseBuildListQuery({ created_from: ["2025-01-01", "2025-01-02"] }))).toBe(
      "created_from may be given only once",
    );
  });
});

describe("parseIsoTime", () => {
  it.each([
    ["2025-01-08T23:22:05Z", "2025-01-08T23:22:05.000Z"],
    ["2025-01-08T23:22:05.874Z", "2025-01-08T23:22:05.874Z"],
    ["2025-01-08T23:22:05.874123456Z", "2025-01-08T23:22:05.874Z"],
    ["2025-01-08T23:22:05+01:00", "2025-01-08T22:22:05.000Z"],
    ["2025-01-08T23:22:05 01:00", "2025-01-08T22:22:05.000Z"],
    ["2025-01-08T23:22:05-0230", "2025-01-09T01:52:05.000Z"],
    ["2025-01-08T23:22:05+05", "2025-01-08T18:22:05.000Z"],
    ["2025-01-08T23:22", "2025-01-08T23:22:00.000Z"],
    ["2025-01-08T23:22:05", "2025-01-08T23:22:05.000Z"],
    ["2025-01-08 23:22:05Z", "2025-01-08T23:22:05.000Z"],
    ["2024-02-29", "2024-02-29T00:00:00.000Z"],
  ])("reads %s", (raw, expected) => {
    expect(iso("created_from", raw)).toBe(expected);
  });

  it.each([
    "yesterday",
    "2025-13-01",
    "2025-02-30",
    "2025-02-29",
    "2025-01-08T24:00:00Z",
    "2025-01-08T23:60:00Z",
    "1736378525",
    "2025-1-8",
    "",
  ])("answers 400 for %j", (raw) => {
    expect(error400(() => parseIsoTime("finished_from", raw))).toBe(
      `finished_from must be an ISO 8601 time such as 2025-01-08T23:22:05Z, got "${raw}"`,
    );
  });
});

describe("parseBoolean", () => {
  it("treats absent as false", () => {
    expect(parseBoolean("x", undefined)).toBe(false);
    expect(parseBoolean("x", "TRUE")).toBe(true);
  });
});
