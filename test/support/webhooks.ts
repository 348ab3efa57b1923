/** What the webhook suites arrange: pipelines with provider settings, their webhook URLs, and deliveries to them. */
import { readFileSync } from "node:fs";
import { send, unique } from "./stack-env.js";

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field in the suites.
type Json = any;

/** A pipeline that receives webhooks: its slug, its builds' path and its webhook URL. */
export interface HookedPipeline {
  slug: string;
  builds: string;
  webhookUrl: string;
}

/** Creates a pipeline of the organization with the given provider settings and steps, and reads its webhook URL. */
export async function arrangeHookedPipeline(opts: {
  orgSlug: string;
  token: string;
  clusterId: string;
  settings?: Record<string, unknown>;
  configuration?: string;
  branchConfiguration?: string;
}): Promise<HookedPipeline> {
  const pipelines = `/v2/organizations/${opts.orgSlug}/pipelines`;
  const created = await send("POST", pipelines, opts.token, {
    name: unique("Hooked"),
    repository: "git@github.com:Codertocat/Hello-World.git",
    cluster_id: opts.clusterId,
    configuration: opts.configuration ?? "steps:\n  - command: make test\n",
    ...(opts.settings ? { provider_settings: opts.settings } : {}),
    ...(opts.branchConfiguration ? { branch_configuration: opts.branchConfiguration } : {}),
  });
  if (created.status !== 201) throw new Error(`pipeline not created: ${created.status} ${created.text}`);
  const slug: string = created.body.slug;
  const webhookUrl: string = created.body.provider.webhook_url;
  if (!webhookUrl.includes("/webhooks/deliver/")) throw new Error(`no webhook URL: ${created.text}`);
  return { slug, builds: `${pipelines}/${slug}/builds`, webhookUrl };
}

/** POSTs a delivery to a webhook URL: the JSON body as given (so that signatures over it hold), and the headers. */
export async function deliver(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  let parsed: Json;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new Error(`${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  return { status: res.status, body: parsed };
}

/** GitHub's own example payloads (@octokit/webhooks-examples: its main file is every event's examples, as JSON). */
export function githubExamples(): Array<{ name: string; examples: unknown[] }> {
  return JSON.parse(readFileSync(require.resolve("@octokit/webhooks-examples"), "utf8"));
}

/** Every build of a pipeline, oldest first, with its jobs. */
export async function buildsOf(pipeline: HookedPipeline, token: string): Promise<Json[]> {
  const res = await send("GET", `${pipeline.builds}?per_page=100`, token);
  if (res.status !== 200) throw new Error(`builds not listed: ${res.status} ${res.text}`);
  return [...res.body].reverse();
}
