/**
 * The walk-through `npm start` prints and the README shows under "Your first build": a local git repository, a
 * pipeline of two command steps in the bootstrap cluster, a build, and, once the build finished, its state and jobs. The commands use the
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
  return [
    `REPO=${FIRST_BUILD_REPO}`,
    // A shell function that runs a line of JavaScript over the JSON on its standard input, as `v`.
    `json() { node -e "const v = JSON.parse(require('fs').readFileSync(0, 'utf8')); $1"; }`,
    "# a git repository with one commit (the agent clones it from this path)",
    'git init -q -b main "$REPO"',
    `printf '# Hello\\nBuilt by Conveyor.\\n' > "$REPO/README.md"`,
    'git -C "$REPO" add README.md',
    'git -C "$REPO" -c user.name=Conveyor -c user.email=conveyor@localhost commit -q -m "First commit"',
    "# a pipeline in the cluster, with two command steps",
    `curl -sS -X POST "$API/pipelines" ${auth} ${json} \\`,
    `  --data-binary @- <<EOF | json 'console.log("pipeline:", v.slug ?? v.message)'`,
    ...pipelineJson,
    "EOF",
    "# a build of the branch's latest commit",
    `NUMBER=$(curl -sS -X POST "$API/pipelines/hello/builds" ${auth} \\`,
    `  ${json} -d '{"commit": "HEAD", "branch": "main", "message": "My first build"}' |`,
    "  json 'console.log(v.number)')",
    'echo "build: $NUMBER"',
    "# wait until the build is finished (the local agent runs its jobs), then print its state and its jobs",
    `until BUILD=$(curl -sS "$API/pipelines/hello/builds/$NUMBER" ${auth}) &&`,
    `  echo "$BUILD" | json 'process.exit(v.finished_at ? 0 : 1)'; do sleep 1; done`,
    `echo "$BUILD" | json 'console.log(v.state); for (const j of v.jobs) console.log(" ", j.label, j.state, j.exit_status)'`,
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
