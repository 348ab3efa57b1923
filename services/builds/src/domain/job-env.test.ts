import { aBuild, aJob } from "../test-support.js";
import type { Build } from "./build.js";
import type { Job } from "./job.js";
import { jobEnvironment, sshHost, tagVariable } from "./job-env.js";

const build: Build = aBuild({
  pipeline: {
    name: "App",
    repository: "/srv/git/app",
    defaultBranch: "main",
    providerId: "git",
    env: { SHARED: "pipeline", FROM_PIPELINE: "1" },
    organizationSlug: "acme",
    timeouts: { default: null, maximum: null },
  },
  number: 7,
  state: "running",
  message: "Fix it",
  commit: "HEAD",
  env: { SHARED: "build", FROM_BUILD: "1" },
  creator: { id: "u-1", name: "Ada", email: "ada@example.com", avatarUrl: null, createdAt: null },
  author: { name: "Grace", email: "grace@example.com" },
});

const job: Job = aJob({
  stepKey: "test",
  state: "accepted",
  name: "Test",
  label: "Test",
  command: "make test",
  agentQueryRules: ["queue=default"],
  env: { SHARED: "step", FROM_STEP: "1", BUILDKITE_REPO: "elsewhere" },
  artifactPaths: "dist/**/*",
  step: { type: "script", name: "Test", command: "make test", agent_query_rules: [] },
  buildNumber: 7,
  stepId: "s-1",
  clusterId: "c-1",
  agent: {
    id: "a-1",
    name: "box-1",
    hostname: "box",
    ipAddress: "127.0.0.1",
    userAgent: "buildkite-agent/3.137.0",
    connectionState: "connected",
    createdAt: null,
    metaData: ["queue=default", "os=linux", "docker-version=27"],
  },
});

describe("jobEnvironment", () => {
  const env = jobEnvironment(build, job);

  it("sets every variable the agent's bootstrap requires, non-empty", () => {
    for (const name of [
      "BUILDKITE_JOB_ID",
      "BUILDKITE_REPO",
      "BUILDKITE_COMMIT",
      "BUILDKITE_BRANCH",
      "BUILDKITE_AGENT_NAME",
      "BUILDKITE_ORGANIZATION_SLUG",
      "BUILDKITE_PIPELINE_SLUG",
      "BUILDKITE_PIPELINE_PROVIDER",
      "BUILDKITE_COMMAND",
      "BUILDKITE_BUILD_ID",
    ]) {
      expect(env[name]).toBeTruthy();
    }
    expect(env).toMatchObject({
      CI: "true",
      BUILDKITE: "true",
      BUILDKITE_JOB_ID: "j-1",
      BUILDKITE_REPO: "/srv/git/app",
      BUILDKITE_COMMIT: "HEAD",
      BUILDKITE_BRANCH: "main",
      BUILDKITE_AGENT_NAME: "box-1",
      BUILDKITE_AGENT_ID: "a-1",
      BUILDKITE_ORGANIZATION_SLUG: "acme",
      BUILDKITE_PIPELINE_SLUG: "app",
      BUILDKITE_PIPELINE_NAME: "App",
      BUILDKITE_PIPELINE_PROVIDER: "git",
      BUILDKITE_COMMAND: "make test",
      BUILDKITE_BUILD_NUMBER: "7",
      BUILDKITE_STEP_KEY: "test",
      BUILDKITE_STEP_ID: "s-1",
      BUILDKITE_LABEL: "Test",
      BUILDKITE_ARTIFACT_PATHS: "dist/**/*",
      BUILDKITE_SOURCE: "api",
      BUILDKITE_BUILD_CREATOR: "Ada",
      BUILDKITE_BUILD_CREATOR_EMAIL: "ada@example.com",
      BUILDKITE_BUILD_AUTHOR: "Grace",
      BUILDKITE_MESSAGE: "Fix it",
      BUILDKITE_PULL_REQUEST: "false",
      BUILDKITE_TIMEOUT: "false",
      BUILDKITE_RETRY_COUNT: "0",
    });
  });

  it("has only string values", () => {
    for (const value of Object.values(env)) expect(typeof value).toBe("string");
  });

  it("layers the user's env pipeline < build < step, under the service's own variables", () => {
    expect(env.SHARED).toBe("step");
    expect(env).toMatchObject({ FROM_PIPELINE: "1", FROM_BUILD: "1", FROM_STEP: "1" });
    expect(env.BUILDKITE_REPO).toBe("/srv/git/app");
  });

  it("exports the agent's tags as BUILDKITE_AGENT_META_DATA_*", () => {
    expect(env.BUILDKITE_AGENT_META_DATA_QUEUE).toBe("default");
    expect(env.BUILDKITE_AGENT_META_DATA_OS).toBe("linux");
    expect(env.BUILDKITE_AGENT_META_DATA_DOCKER_VERSION).toBe("27");
  });

  it("leaves out what the job does not have, and fills parallelism, timeouts and pull requests when it does", () => {
    expect(env).not.toHaveProperty("BUILDKITE_PARALLEL_JOB");
    expect(env).not.toHaveProperty("BUILDKITE_TAG");
    expect(env).not.toHaveProperty("BUILDKITE_PLUGINS");
    expect(env).not.toHaveProperty("BUILDKITE_REPO_SSH_HOST");
    const other = jobEnvironment(
      {
        ...build,
        pullRequest: {
          id: "42",
          base: "main",
          repository: "git@github.com:a/b.git",
          labels: ["bug", "ui"],
          draft: true,
          fork: false,
        },
        cleanCheckout: true,
      },
      {
        ...job,
        parallelGroupIndex: 2,
        parallelGroupTotal: 4,
        timeoutInMinutes: 30,
        step: { ...job.step, type: "script", plugins: [{ "docker#v5": { image: "node" } }] } as Job["step"],
      },
    );
    expect(other).toMatchObject({
      BUILDKITE_PARALLEL_JOB: "2",
      BUILDKITE_PARALLEL_JOB_COUNT: "4",
      BUILDKITE_TIMEOUT: "30",
      BUILDKITE_PULL_REQUEST: "42",
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
      BUILDKITE_PULL_REQUEST_REPO: "git@github.com:a/b.git",
      BUILDKITE_PULL_REQUEST_LABELS: "bug,ui",
      BUILDKITE_PULL_REQUEST_DRAFT: "true",
      BUILDKITE_CLEAN_CHECKOUT: "true",
      BUILDKITE_PLUGINS: '[{"github.com/buildkite-plugins/docker-buildkite-plugin#v5":{"image":"node"}}]',
    });
  });

  it("sets a tag build's BUILDKITE_TAG, and leaves out a pull request's draft state when the forge did not say", () => {
    expect(jobEnvironment({ ...build, tag: "v1.2", branch: "v1.2" }, job)).toMatchObject({
      BUILDKITE_TAG: "v1.2",
      BUILDKITE_BRANCH: "v1.2",
    });
    const unknownDraft = jobEnvironment(
      { ...build, pullRequest: { id: "7", base: "", repository: "", labels: [], draft: null, fork: null } },
      job,
    );
    expect(unknownDraft).toMatchObject({ BUILDKITE_PULL_REQUEST: "7", BUILDKITE_PULL_REQUEST_LABELS: "" });
    expect(unknownDraft).not.toHaveProperty("BUILDKITE_PULL_REQUEST_DRAFT");
    expect(env).not.toHaveProperty("BUILDKITE_PULL_REQUEST_LABELS");
  });

  it("names the build that triggered this one, and the retry this job is", () => {
    expect(env).not.toHaveProperty("BUILDKITE_TRIGGERED_FROM_BUILD_ID");
    const triggered = jobEnvironment(
      {
        ...build,
        triggeredFrom: { buildId: "b-0", buildNumber: 3, pipelineId: "p-0", pipelineSlug: "ci", jobId: "j-0" },
      },
      { ...job, retriesCount: 2 },
    );
    expect(triggered).toMatchObject({
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: "b-0",
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: "3",
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: "ci",
      BUILDKITE_RETRY_COUNT: "2",
    });
  });
});

describe("tagVariable and sshHost", () => {
  it("turns tag names into variable suffixes", () => {
    expect(tagVariable("queue")).toBe("QUEUE");
    expect(tagVariable("docker.version-x")).toBe("DOCKER_VERSION_X");
  });

  it("finds the host of SSH and HTTPS repositories only", () => {
    expect(sshHost("git@github.com:acme/app.git")).toBe("github.com");
    expect(sshHost("https://gitlab.example.com/acme/app.git")).toBe("gitlab.example.com");
    expect(sshHost("ssh://git@bitbucket.org/acme/app.git")).toBe("bitbucket.org");
    expect(sshHost("/srv/git/app")).toBeNull();
    expect(sshHost("file:///srv/git/app")).toBeNull();
  });
});
