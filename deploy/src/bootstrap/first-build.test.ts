import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  FIRST_BUILD_PIPELINE_YAML,
  FIRST_BUILD_REPO,
  firstBuildCommands,
  firstBuildWalkthrough,
} from "./first-build.js";

/** The build as the API answers once it finished. */
const FINISHED = JSON.stringify({
  state: "passed",
  finished_at: "2026-01-01T00:00:05.000Z",
  jobs: [{ label: "Say hello", state: "passed", exit_status: 0 }],
});

describe("the first-build walk-through", () => {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-first-build-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const lines = firstBuildWalkthrough({
    apiUrl: "http://127.0.0.1:8080",
    orgSlug: "conveyor",
    apiToken: "bkua_token",
    clusterId: "0190c0de-0000-7000-8000-000000000001",
  });

  /**
   * Runs the walk-through in bash as a user would paste it, with its repository in a temporary folder and `curl`
   * replaced by a function that records each request and answers as the API would: the pipeline, the build (number
   * 1), then the build still running once and finished after that.
   */
  function runWalkthrough(): string {
    const repo = join(dir, "hello");
    const script = lines.map((line) => (line === `REPO=${FIRST_BUILD_REPO}` ? `REPO=${repo}` : line));
    const fakeCurl = [
      // The walk-through runs curl in pipelines and command substitutions (subshells): the count is kept in a file.
      `echo 0 > "${dir}/count"`,
      "curl() {",
      `  n=$(($(cat "${dir}/count") + 1)); echo "$n" > "${dir}/count"`,
      `  printf '%s\\n' "$@" > "${dir}/request-$n.args"`,
      '  case "$*" in',
      `    *--data-binary*) cat > "${dir}/request-$n.body"; printf '%s' '{"slug":"hello"}' ;;`,
      `    *POST*builds*) printf '%s' '{"number":1}' ;;`,
      `    *builds/1*) if [ "$n" -eq 3 ]; then printf '%s' '{"state":"running","jobs":[]}'; else printf '%s' '${FINISHED}'; fi ;;`,
      "  esac",
      "}",
    ];
    expect(lines.filter((l) => l === `REPO=${FIRST_BUILD_REPO}`)).toHaveLength(1);
    return execFileSync("bash", ["-e", "-c", [...fakeCurl, ...script].join("\n")], {
      encoding: "utf8",
      env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
  }

  it("makes a repository with one commit, a pipeline of two command steps in the cluster, a build, and reads it", () => {
    const output = runWalkthrough();
    const repo = join(dir, "hello");
    expect(execFileSync("git", ["-C", repo, "log", "--format=%s", "main"], { encoding: "utf8" })).toBe(
      "First commit\n",
    );
    expect(readFileSync(join(repo, "README.md"), "utf8")).toBe("# Hello\nBuilt by Conveyor.\n");

    const args = (n: number) => readFileSync(join(dir, `request-${n}.args`), "utf8").split("\n");
    expect(args(1)).toEqual(
      expect.arrayContaining([
        "POST",
        "http://127.0.0.1:8080/v2/organizations/conveyor/pipelines",
        "Authorization: Bearer bkua_token",
      ]),
    );
    const pipeline = JSON.parse(readFileSync(join(dir, "request-1.body"), "utf8"));
    expect(pipeline).toEqual({
      name: "Hello",
      repository: repo,
      cluster_id: "0190c0de-0000-7000-8000-000000000001",
      configuration: FIRST_BUILD_PIPELINE_YAML,
    });
    expect(pipeline.configuration.match(/command:/g)).toHaveLength(2);

    expect(args(2)).toContain("http://127.0.0.1:8080/v2/organizations/conveyor/pipelines/hello/builds");
    const build = JSON.parse(args(2)[args(2).indexOf("-d") + 1] ?? "");
    expect(build).toEqual({ commit: "HEAD", branch: "main", message: "My first build" });

    expect(args(3)).toContain("http://127.0.0.1:8080/v2/organizations/conveyor/pipelines/hello/builds/1");
    expect(args(4)).toEqual(args(3));
    expect(output).toBe("pipeline: hello\nbuild: 1\npassed\n  Say hello passed 0\n");
  });
});

describe('README\'s "Your first build"', () => {
  it("holds the same commands as npm start's summary", () => {
    const readme = readFileSync(join(__dirname, "..", "..", "..", "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Your first build"));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    expect(block).toBe(
      [
        `TOKEN=$(node -p 'require("./.data/credentials.json").apiToken.secret')`,
        `CLUSTER=$(node -p 'require("./.data/credentials.json").cluster.id')`,
        "API=http://127.0.0.1:8080/v2/organizations/conveyor",
        ...firstBuildCommands(),
        "",
      ].join("\n"),
    );
  });
});
