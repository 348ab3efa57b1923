/** A small REST client over one organization of the API, for the drills (`npm run faults`, `npm run bench`). */
import { setTimeout as sleep } from "node:timers/promises";
import type { BuildView } from "../faults/fault-invariants.js";
import { lenientJson } from "./lenient-json.js";

/** One answer: its status (0 when none came), parsed body and headers, and how long it took. */
export interface Answer {
  status: number;
  body: unknown;
  headers: Headers | undefined;
  ms: number;
  /** Whether the body was a JSON object with a string `message` (every error answer must be). */
  jsonMessage: boolean;
  /** Set when the client gave up waiting after `timeoutMs`. */
  hung: boolean;
}

/** A call on `/v2/organizations/{org}` + path; a body is sent as JSON. */
export type Api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>;

/** A client of one organization, authenticated with its API token; a call waits at most `timeoutMs`. */
export function createApi(apiUrl: string, org: string, token: string, timeoutMs: number): Api {
  return async (method, path, body, headers = {}) => {
    const t0 = Date.now();
    try {
      const res = await fetch(`${apiUrl}/v2/organizations/${org}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      const parsed = lenientJson(text);
      const jsonMessage =
        typeof parsed === "object" && parsed !== null && typeof (parsed as { message?: unknown }).message === "string";
      return { status: res.status, body: parsed, headers: res.headers, ms: Date.now() - t0, jsonMessage, hung: false };
    } catch (err) {
      const hung = err instanceof Error && err.name === "TimeoutError";
      return { status: 0, body: undefined, headers: undefined, ms: Date.now() - t0, jsonMessage: false, hung };
    }
  };
}

/** Every build of the pipeline (with its jobs), through the REST list, page by page; a failing page is retried. */
export async function listBuilds(api: Api, buildsPath: string): Promise<BuildView[]> {
  const all: BuildView[] = [];
  for (let page = 1; ; page++) {
    let res = await api("GET", `${buildsPath}?per_page=100&page=${page}`);
    for (let attempt = 0; res.status !== 200 && attempt < 30; attempt++) {
      await sleep(1_000);
      res = await api("GET", `${buildsPath}?per_page=100&page=${page}`);
    }
    if (res.status !== 200) throw new Error(`listing builds answered ${res.status}`);
    const items = res.body as BuildView[];
    all.push(...items);
    if (items.length < 100) return all;
  }
}
