/**
 * The walk-through `npm start` prints and the README shows under "Your first build": a local git repository, a
 * pipeline of two command steps in the bootstrap cluster, a build, and the build read back. The commands use the
 * shell variables TOKEN, CLUSTER and API; the summary sets them to the values of the running stack, the README reads
 * them from .data/credentials.json.
 */

/** The repository the walk-through creates. */
export const FIRST_BUILD_REPO = "/tmp/conveyor-hello";

/** The pipeline's YAML: two command steps, the second one reading the checkout. */
export const FIRST_BUILD_PIPELINE_YAML = [
  "steps:",
  "  - label: Say hello",
  "    command: echo Hello from Conveyor",
  "  - label: Show the checkout",
  "    command: cat README.md && git log --oneline -1",
  "",
].join("\n");

/** The commands after the variables, one shell line each. */
export function firstBuildCommands(): string[] {
  const auth = '-H "Authorization: Bearer $TOKEN"';
  const json = '-H "Content-Type: application/json"';
  // In an unquoted here-document "\n" stays as it is: JSON's escape for the YAML's line breaks.
  const pipelineJson = [
    "{",
    '  "name": "Hello",',
    '  "repository": "$REPO",',
    '  "cluster_id": "$CLUSTER",',
    `  "configuration": ${JSON.stringify(FIRST_BUILD_PIPELINE_YAML)}`,
    "}",
  ];
  const readBack =
    'node -e \'const b = JSON.parse(require("fs").readFileSync(0, "utf8")); ' +
    'console.log(b.state ?? b.message); for (const j of b.jobs ?? []) console.log(" ", j.label, j.state, j.exit_status ?? "")\'';
  // curl -w '\n': a JSON answer ends without a line break, and the next command's output would run on from it.
  return [
    `REPO=${FIRST_BUILD_REPO}`,
    "# a git repository with one commit (the agent clones it from this path)",
    'git init -q -b main "$REPO"',
    `printf '# Hello\\nBuilt by Conveyor.\\n' > "$REPO/README.md"`,
    'git -C "$REPO" add README.md',
    'git -C "$REPO" -c user.name=Conveyor -c user.email=conveyor@localhost commit -q -m "First commit"',
    "# a pipeline in the cluster, with two command steps",
    `curl -sS -w '\\n' -X POST "$API/pipelines" ${auth} ${json} --data-binary @- <<EOF`,
    ...pipelineJson,
    "EOF",
    "# a build of the branch's latest commit",
    `curl -sS -w '\\n' -X POST "$API/pipelines/hello/builds" ${auth} ${json} \\`,
    `  -d '{"commit": "HEAD", "branch": "main", "message": "My first build"}'`,
    "# a few seconds later, once a local agent has run both jobs: passed, and each job passed with exit status 0",
    `curl -sS "$API/pipelines/hello/builds/1" ${auth} | ${readBack}`,
  ];
}

/** The whole walk-through with the variables set to a stack's values (for `npm start`'s summary). */
export function firstBuildWalkthrough(values: {
  apiUrl: string;
  orgSlug: string;
  apiToken: string;
  clusterId: string;
}): string[] {
  return [
    `TOKEN=${values.apiToken}`,
    `CLUSTER=${values.clusterId}`,
    `API=${values.apiUrl}/v2/organizations/${values.orgSlug}`,
    ...firstBuildCommands(),
  ];
}
