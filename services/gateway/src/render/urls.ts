/** Builds the `url` (API) and `web_url` fields from the configured public base URLs. */
export interface Urls {
  api(path: string): string;
  web(path: string): string;
}

export function createUrls(publicUrl: string, webUrl: string): Urls {
  const trim = (s: string) => s.replace(/\/+$/, "");
  const api = trim(publicUrl);
  const web = trim(webUrl);
  return {
    api: (path) => `${api}/v2/${path.replace(/^\/+/, "")}`,
    web: (path) => `${web}/${path.replace(/^\/+/, "")}`,
  };
}

/** An opaque GraphQL id in Buildkite's style: base64 of "<Type>---<uuid>". */
export function graphqlId(type: string, id: string): string {
  return Buffer.from(`${type}---${id}`).toString("base64");
}
