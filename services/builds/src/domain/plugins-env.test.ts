import { parsePipelineYaml } from "@conveyor/ci-rules";
import { fullPluginSource, pluginsEnvironment } from "./plugins-env.js";

// The JSON must equal, after JCS canonicalisation, what the agent's pipeline library (go-pipeline Plugin.MarshalJSON)
// makes of the signed step's plugins, or the agent refuses a signed job (docs/security.md#signed-pipelines).

describe("fullPluginSource", () => {
  it.each([
    ["docker#v5.12.0", "github.com/buildkite-plugins/docker-buildkite-plugin#v5.12.0"],
    ["docker", "github.com/buildkite-plugins/docker-buildkite-plugin"],
    ["acme/lint#main", "github.com/acme/lint-buildkite-plugin#main"],
    ["/acme/lint", "/acme/lint"],
    ["./.buildkite/plugins/hello", "./.buildkite/plugins/hello"],
    ["../plugins/x", "../plugins/x"],
    ["\\\\share\\plugin", "\\\\share\\plugin"],
    ["https://github.com/acme/x.git#v1", "https://github.com/acme/x.git#v1"],
    ["ssh://git@github.com/acme/x.git#v1", "ssh://git@github.com/acme/x.git#v1"],
    ["file:///plugins/x", "file:///plugins/x"],
    ["gitlab.com/acme/x#v1", "gitlab.com/acme/x#v1"],
    ["", ""],
  ])("%s → %s", (source, full) => expect(fullPluginSource(source)).toBe(full));
});

describe("pluginsEnvironment", () => {
  const plugins = (yaml: string) => {
    const parsed = parsePipelineYaml(yaml);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const step = parsed.steps[0] as { plugins?: Array<Record<string, unknown>> };
    return step.plugins;
  };

  it("writes the list form with settings, a plugin without settings and one with empty settings", () => {
    const yaml = [
      "steps:",
      "  - command: x",
      "    plugins:",
      "      - ./.buildkite/plugins/hello: {greeting: hi, n: 2, list: [a]}",
      "      - docker#v5",
      "      - acme/lint#v1: {}",
      "      - ./.buildkite/plugins/bare: ~",
    ].join("\n");
    expect(JSON.parse(pluginsEnvironment(plugins(yaml)) ?? "")).toEqual([
      { "./.buildkite/plugins/hello": { greeting: "hi", n: 2, list: ["a"] } },
      { "github.com/buildkite-plugins/docker-buildkite-plugin#v5": null },
      { "github.com/acme/lint-buildkite-plugin#v1": null },
      { "./.buildkite/plugins/bare": null },
    ]);
  });

  it("writes the map form as the list of one-key objects, in the order written", () => {
    const yaml = [
      "steps:",
      "  - command: x",
      "    plugins:",
      "      ./.buildkite/plugins/hello: {greeting: hi}",
      "      docker#v5: ~",
    ].join("\n");
    expect(pluginsEnvironment(plugins(yaml))).toBe(
      '[{"./.buildkite/plugins/hello":{"greeting":"hi"}},{"github.com/buildkite-plugins/docker-buildkite-plugin#v5":null}]',
    );
  });

  it("is null for no plugins", () => {
    expect(pluginsEnvironment(undefined)).toBeNull();
    expect(pluginsEnvironment([])).toBeNull();
  });

  it("writes empty list settings as null, and keeps other values as they are", () => {
    expect(pluginsEnvironment([{ a: [] }, { b: "text" }, { c: false }])).toBe(
      '[{"github.com/buildkite-plugins/a-buildkite-plugin":null},' +
        '{"github.com/buildkite-plugins/b-buildkite-plugin":"text"},' +
        '{"github.com/buildkite-plugins/c-buildkite-plugin":false}]',
    );
  });
});
