import { type BuildInput, buildInputProblems } from "./build-input.js";

const valid: BuildInput = {
  commit: "abc123",
  branch: "main",
  message: "Fix it\n\nWith a body\tand a tab",
  env: { FOO: "bar", "my.var": "x" },
  metaData: { release: "1.0" },
  pullRequestId: "",
  pullRequestBaseBranch: "",
  pullRequestRepository: "",
  pullRequestLabels: [],
  author: { name: "Ann", email: "ann@example.com" },
};
const fields = (input: Partial<BuildInput>) => buildInputProblems({ ...valid, ...input }).map((p) => p.field);

describe("buildInputProblems", () => {
  it("accepts an ordinary build, a multi-line message included", () => {
    expect(buildInputProblems(valid)).toEqual([]);
    expect(fields({ pullRequestId: "9007199254740991" })).toEqual([]);
  });

  it("refuses blank, over-long and control-character commits and branches", () => {
    expect(fields({ commit: " ", branch: "" })).toEqual(["commit", "branch"]);
    expect(buildInputProblems({ ...valid, branch: "ma\u0000in" })).toEqual([
      { field: "branch", code: "must not contain NUL characters" },
    ]);
    expect(fields({ branch: "ma\u001bin", commit: "a\nb" })).toEqual(["commit", "branch"]);
    expect(fields({ branch: "b".repeat(1025) })).toEqual(["branch"]);
  });

  it("refuses env names a process environment cannot hold, naming the key safely", () => {
    expect(buildInputProblems({ ...valid, env: { "": "x", "A=B": "y", "A\u0000": "z" } })).toEqual([
      { field: "env.", code: "is not a valid environment variable name" },
      { field: "env.A=B", code: "is not a valid environment variable name" },
      { field: "env.A?", code: "is not a valid environment variable name" },
    ]);
    expect(fields({ env: { A: "x\u0000" } })).toEqual(["env.A"]);
  });

  it("refuses messages with control characters other than tabs and line breaks", () => {
    expect(fields({ message: "bell\u0007" })).toEqual(["message"]);
  });

  it("refuses blank or control-character meta-data keys and NUL values", () => {
    expect(fields({ metaData: { " ": "x" } })).toEqual(["meta_data"]);
    expect(fields({ metaData: { "a\u0001": "x", b: "\u0000" } })).toEqual(["meta_data.a?", "meta_data.b"]);
  });

  it("refuses pull request ids that are not decimal or beyond what a JSON number holds exactly", () => {
    for (const id of ["x", "-1", "1.5", "9007199254740993", "1".repeat(30)]) {
      expect([id, fields({ pullRequestId: id })]).toEqual([id, ["pull_request_id"]]);
    }
  });

  it("refuses blank, over-long or control-character pull request labels, and too many", () => {
    expect(fields({ pullRequestLabels: ["bug", "needs review"] })).toEqual([]);
    expect(fields({ pullRequestLabels: [" "] })).toEqual(["pull_request_labels"]);
    expect(fields({ pullRequestLabels: ["a\u0000"] })).toEqual(["pull_request_labels"]);
    expect(fields({ pullRequestLabels: ["x".repeat(256)] })).toEqual(["pull_request_labels"]);
    expect(fields({ pullRequestLabels: Array.from({ length: 101 }, (_, i) => `l${i}`) })).toEqual([
      "pull_request_labels",
    ]);
  });

  it("refuses control characters in the pull request's branch and repository and the author", () => {
    expect(
      fields({
        pullRequestBaseBranch: "m\u0000",
        pullRequestRepository: "r\u0007",
        author: { name: "A\u0000", email: "e" },
      }),
    ).toEqual(["pull_request_base_branch", "pull_request_repository", "author.name"]);
  });
});
