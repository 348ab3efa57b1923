/**
 * A job's `BUILDKITE_PLUGINS`: its step's plugins as the JSON the agent reads and, for a signed step, compares (after
 * JCS canonicalisation) with the JSON of the signed step's own plugins (docs/security.md#signed-pipelines). So each
 * entry is written the way the agent's pipeline library marshals a plugin: a one-key object `{full source: config}`,
 * the source expanded as Buildkite resolves plugin names (`docker#v5` → `github.com/buildkite-plugins/
 * docker-buildkite-plugin#v5`, `acme/lint` → `github.com/acme/lint-buildkite-plugin`; paths and URLs kept), and an
 * absent or empty configuration as `null`. Pure.
 */

/** The `BUILDKITE_PLUGINS` value for a step's plugins (each `{ "name#version": config or null }`), or null for none. */
export function pluginsEnvironment(plugins: ReadonlyArray<Record<string, unknown>> | undefined): string | null {
  if (!plugins || plugins.length === 0) return null;
  return JSON.stringify(
    plugins.flatMap((entry) =>
      Object.entries(entry).map(([source, config]) => ({ [fullPluginSource(source)]: canonicalConfig(config) })),
    ),
  );
}

/**
 * A plugin source in full form, as Buildkite resolves it (https://buildkite.com/docs/plugins/using#plugin-sources):
 * a name alone is one of the buildkite-plugins organisation's, `owner/name` is on GitHub, each with
 * `-buildkite-plugin` added and the `#version` kept; a path (starting `/`, `.` or `\`), a URL with a scheme and
 * anything with more than one slash are kept as written.
 */
export function fullPluginSource(source: string): string {
  if (source === "" || /^[/.\\]/.test(source)) return source;
  // A scheme (https://, ssh://, file:) or an scp-like `host:path` (C:\…, git@host:…): the writer means it.
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(source)) return source;
  const hash = source.indexOf("#");
  const path = (hash < 0 ? source : source.slice(0, hash)).replace(/^\//, "");
  const version = hash < 0 ? "" : source.slice(hash + 1);
  const segments = path.split("/");
  if (segments.length > 2) return source;
  const last = `${segments[segments.length - 1]}-buildkite-plugin${version === "" ? "" : `#${version}`}`;
  return segments.length === 1 ? `github.com/buildkite-plugins/${last}` : `github.com/${segments[0]}/${last}`;
}

/** A configuration with an empty mapping or list written as null, as the agent's pipeline library does. */
function canonicalConfig(config: unknown): unknown {
  if (config === undefined || config === null) return null;
  if (Array.isArray(config)) return config.length === 0 ? null : config;
  if (typeof config === "object" && Object.keys(config).length === 0) return null;
  return config;
}
