import type { BuildContext } from "./build-context.js";
import {
  buildEnvValue,
  CONDITION_FUNCTIONS,
  CONDITION_VARIABLES,
  isConditionFunction,
  isConditionVariable,
} from "./condition-variables.js";

const full: BuildContext = {
  id: "b-1",
  number: 3,
  branch: "main",
  commit: "c0ffee",
  message: "msg",
  source: "webhook",
  sourceEvent: "pull_request",
  sourceAction: "opened",
  tag: "v1",
  env: { A: "1" },
  pullRequest: {
    id: "9",
    baseBranch: "develop",
    draft: false,
    labels: ["x"],
    repository: "https://github.com/someone/web.git",
    fork: true,
  },
  creator: { id: "u", name: "Ada", email: "ada@example.com" },
  author: { name: "Grace", email: "grace@example.com" },
  pipeline: { slug: "web", defaultBranch: "trunk", id: "p" },
  organization: { slug: "acme", id: "o" },
};

describe("CONDITION_VARIABLES", () => {
  it("reads each variable from the build context", () => {
    const values = Object.fromEntries(Object.entries(CONDITION_VARIABLES).map(([name, read]) => [name, read(full)]));
    expect(values).toEqual({
      "build.id": "b-1",
      "build.number": 3,
      "build.branch": "main",
      "build.state": null,
      "build.commit": "c0ffee",
      "build.message": "msg",
      "build.source": "webhook",
      "build.source_event": "pull_request",
      "build.source_action": "opened",
      "build.tag": "v1",
      "build.pull_request.id": "9",
      "build.pull_request.base_branch": "develop",
      "build.pull_request.draft": false,
      "build.pull_request.labels": ["x"],
      "build.pull_request.repository": "https://github.com/someone/web.git",
      "build.pull_request.repository.fork": true,
      "build.creator.id": "u",
      "build.creator.name": "Ada",
      "build.creator.email": "ada@example.com",
      "build.author.name": "Grace",
      "build.author.email": "grace@example.com",
      "pipeline.id": "p",
      "pipeline.slug": "web",
      "pipeline.default_branch": "trunk",
      "organization.id": "o",
      "organization.slug": "acme",
    });
  });

  it("reads what a build lacks as null, and missing labels as an empty list", () => {
    const bare: BuildContext = {
      ...full,
      sourceEvent: null,
      sourceAction: null,
      tag: null,
      pullRequest: null,
      creator: null,
      author: null,
    };
    delete bare.id;
    delete bare.number;
    const values = Object.fromEntries(Object.entries(CONDITION_VARIABLES).map(([name, read]) => [name, read(bare)]));
    expect(values).toMatchObject({
      "build.state": null,
      "build.id": null,
      "build.number": null,
      "build.tag": null,
      "build.pull_request.id": null,
      "build.pull_request.base_branch": null,
      "build.pull_request.draft": null,
      "build.pull_request.labels": [],
      "build.pull_request.repository": null,
      "build.pull_request.repository.fork": null,
      "build.source_event": null,
      "build.source_action": null,
      "build.creator.id": null,
      "build.author.email": null,
    });
  });

  it("reads the build's state when notify's conditions are evaluated", () => {
    expect(CONDITION_VARIABLES["build.state"]?.({ ...full, state: "failed" })).toBe("failed");
  });

  it("reads a pull request without an id or base branch as null", () => {
    const ctx = {
      ...full,
      pullRequest: { id: null, baseBranch: null, draft: true, labels: [], repository: null, fork: null },
    };
    expect(CONDITION_VARIABLES["build.pull_request.id"]?.(ctx)).toBeNull();
    expect(CONDITION_VARIABLES["build.pull_request.base_branch"]?.(ctx)).toBeNull();
  });
});

describe("isConditionVariable / isConditionFunction", () => {
  it("knows the variables and the one function", () => {
    expect(isConditionVariable("build.branch")).toBe(true);
    expect(isConditionVariable("build.env")).toBe(false);
    expect(isConditionFunction("build.env")).toBe(true);
    expect(Object.keys(CONDITION_FUNCTIONS)).toEqual(["build.env"]);
  });

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])("does not mistake %s for a name", (name) => {
    expect(isConditionVariable(name)).toBe(false);
    expect(isConditionFunction(name)).toBe(false);
  });
});

describe("buildEnvValue", () => {
  it("returns the value or null", () => {
    expect(buildEnvValue(full, "A")).toBe("1");
    expect(buildEnvValue(full, "B")).toBeNull();
    expect(buildEnvValue(full, "constructor")).toBeNull();
  });
});
