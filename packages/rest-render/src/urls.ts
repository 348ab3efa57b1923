/** Builds the `url` (API) and `web_url` fields, and other public links, from the configured base URLs. */
export interface Urls {
  api(path: string): string;
  web(path: string): string;
  /** Where the source provider delivers a pipeline's webhooks. */
  webhook(token: string): string;
  /** A pipeline's status badge. */
  badge(token: string): string;
}

/** The links of a gateway whose API is served at `publicUrl` and whose pages are at `webUrl`. */
export function createUrls(publicUrl: string, webUrl: string): Urls {
  const trim = (s: string) => s.replace(/\/+$/, "");
  const api = trim(publicUrl);
  const web = trim(webUrl);
  return {
    api: (path) => `${api}/v2/${path.replace(/^\/+/, "")}`,
    web: (path) => `${web}/${path.replace(/^\/+/, "")}`,
    webhook: (token) => `${api}/webhooks/deliver/${token}`,
    badge: (token) => `${api}/badges/${token}.svg`,
  };
}

/** An opaque GraphQL id in Buildkite's style: base64 of "<Type>---<uuid>". */
export function graphqlId(type: string, id: string): string {
  return Buffer.from(`${type}---${id}`).toString("base64");
}
