import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

// What a test (or an operator's script) does with a running Gitea (gitea.ts): its REST API as its admin, a
// repository, a webhook, commits pushed with git over HTTP, and Gitea's own record of a webhook's deliveries.

/** What the helpers need of a Gitea: where it is and its admin's credentials (a GiteaServer is one). */
export interface GiteaAccess {
  readonly url: string;
  readonly token: string;
  readonly adminUser: { readonly name: string; readonly password: string };
}

/** An answer of Gitea's API. */
export interface GiteaAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: Gitea's JSON, read field by field by the callers.
  body: any;
  text: string;
}

/** A call to Gitea's API (`/api/v1` + path) as its admin; JSON in and out. */
export async function giteaApi(gitea: GiteaAccess, method: string, path: string, body?: unknown): Promise<GiteaAnswer> {
  const res = await fetch(`${gitea.url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `token ${gitea.token}`,
      accept: "application/json",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** Like giteaApi, but the status must be the expected one; throws with Gitea's answer otherwise. */
async function expectApi(gitea: GiteaAccess, method: string, path: string, status: number, body?: unknown) {
  const res = await giteaApi(gitea, method, path, body);
  if (res.status !== status) throw new Error(`Gitea ${method} ${path}: ${res.status} ${res.text.slice(0, 500)}`);
  return res.body;
}

/** A repository of the admin's. */
export interface GiteaRepository {
  owner: string;
  name: string;
  /** owner/name */
  fullName: string;
  /** The HTTP clone URL (http://127.0.0.1:<port>/owner/name.git): public repositories clone without credentials. */
  cloneUrl: string;
  htmlUrl: string;
  defaultBranch: string;
}

/** Creates an empty repository owned by the admin; public unless `private`. Its default branch is main. */
export async function createGiteaRepository(
  gitea: GiteaAccess,
  opts: { name: string; description?: string; private?: boolean },
): Promise<GiteaRepository> {
  const body = await expectApi(gitea, "POST", "/user/repos", 201, {
    name: opts.name,
    description: opts.description ?? "",
    private: opts.private ?? false,
    auto_init: false,
    default_branch: "main",
  });
  return {
    owner: body.owner.login,
    name: body.name,
    fullName: body.full_name,
    cloneUrl: body.clone_url,
    htmlUrl: body.html_url,
    defaultBranch: body.default_branch,
  };
}

/** The events a Gitea webhook is subscribed to by default: what Conveyor builds from (docs/webhooks.md). */
export const GITEA_HOOK_EVENTS = ["push", "create", "delete", "pull_request", "pull_request_sync"] as const;

/**
 * Adds a webhook of Gitea's own type (`gitea`: X-Gitea-Event, X-Gitea-Signature, and GitHub's headers too) to a
 * repository, sending JSON to `url`, signed with `secret` when given. Resolves with the hook's id.
 */
export async function addGiteaWebhook(
  gitea: GiteaAccess,
  repo: GiteaRepository,
  opts: { url: string; secret?: string; events?: readonly string[]; branchFilter?: string },
): Promise<{ id: number }> {
  const body = await expectApi(gitea, "POST", `/repos/${repo.fullName}/hooks`, 201, {
    type: "gitea",
    active: true,
    events: opts.events ?? GITEA_HOOK_EVENTS,
    branch_filter: opts.branchFilter ?? "*",
    config: {
      url: opts.url,
      content_type: "json",
      http_method: "post",
      ...(opts.secret ? { secret: opts.secret } : {}),
    },
  });
  return { id: body.id };
}

/** The author and committer of commits the helpers make. */
export interface GitAuthor {
  name: string;
  email: string;
}

/**
 * A working copy of a Gitea repository: commit files, tag, and push over HTTP as the admin (its token in an
 * Authorization header, never in a URL that git would print). Each call runs git to completion.
 */
export interface WorkingCopy {
  readonly dir: string;
  /** Writes the files (paths relative to the repository; folders made) and commits them; resolves with the SHA. */
  commit(files: Record<string, string>, message: string, author?: GitAuthor): Promise<string>;
  /** Makes an annotated tag at HEAD. */
  tag(name: string, message?: string): Promise<void>;
  /** Pushes HEAD to a branch of the repository. */
  push(branch: string): Promise<void>;
  /** Pushes a tag made with tag(). */
  pushTag(name: string): Promise<void>;
  /** Deletes a branch of the repository (a push of nothing to it). */
  deleteBranch(branch: string): Promise<void>;
  /** Runs any git command in the working copy; resolves with its output. */
  git(...args: string[]): Promise<string>;
}

const DEFAULT_AUTHOR: GitAuthor = { name: "Conveyor", email: "conveyor@example.com" };

/** A new working copy (an empty repository in a temporary folder, or `dir`) pushing to `repo`. */
export async function giteaWorkingCopy(gitea: GiteaAccess, repo: GiteaRepository, dir?: string): Promise<WorkingCopy> {
  const root = dir ?? mkdtempSync(join(tmpdir(), `gitea-${repo.name}-`));
  mkdirSync(root, { recursive: true });
  const basic = Buffer.from(`${gitea.adminUser.name}:${gitea.token}`).toString("base64");
  const git = (args: string[], author: GitAuthor = DEFAULT_AUTHOR) =>
    run("git", args, root, {
      ...process.env,
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
      GIT_TERMINAL_PROMPT: "0",
      GIT_CONFIG_NOSYSTEM: "1",
    });
  const withAuth = ["-c", `http.extraHeader=Authorization: Basic ${basic}`];
  await git(["init", "-q", "-b", repo.defaultBranch || "main"]);
  return {
    dir: root,
    async commit(files, message, author) {
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), content);
      }
      await git(["add", "--", ...Object.keys(files)]);
      await git(["commit", "-q", "--allow-empty", "-m", message], author);
      return (await git(["rev-parse", "HEAD"])).trim();
    },
    async tag(name, message) {
      await git(["tag", "-a", name, "-m", message ?? name]);
    },
    async push(branch) {
      await git([...withAuth, "push", "-q", repo.cloneUrl, `HEAD:refs/heads/${branch}`]);
    },
    async pushTag(name) {
      await git([...withAuth, "push", "-q", repo.cloneUrl, `refs/tags/${name}:refs/tags/${name}`]);
    },
    async deleteBranch(branch) {
      await git([...withAuth, "push", "-q", repo.cloneUrl, `:refs/heads/${branch}`]);
    },
    git: (...args) => git(args),
  };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(command, args, { cwd, env, encoding: "utf8", timeout: 60_000 }, (err, stdout, stderr) => {
      // The Authorization header is an argument: name the command, not its arguments.
      if (!err) return resolvePromise(stdout);
      // The Authorization header is an argument, and execFile's message repeats them all: name the subcommand only.
      const subcommand = args.find((a) => !a.startsWith("-") && !a.includes("=")) ?? "";
      reject(new Error(`git ${subcommand} failed (${err.code ?? err.signal}): ${stderr.trim()}`));
    });
  });
}

/** One delivery of a webhook, as Gitea recorded it (its hook's page in the repository settings). */
export interface GiteaHookDelivery {
  /** The delivery's id (X-Gitea-Delivery). */
  uuid: string;
  /** X-Gitea-Event: push, create, delete, pull_request, … */
  event: string;
  /** The HTTP status it was answered with; undefined while not delivered (or when no answer came). */
  status?: number;
  /** Gitea counts it a success (a 2xx answer). */
  succeeded: boolean;
  /** The JSON Gitea sent, and what it was answered. */
  requestBody: string;
  responseBody: string;
}

/**
 * Gitea's own record of a webhook's latest deliveries (up to app.ini's PAGING_NUM, 50), newest first. Gitea's API has
 * no call for them, so this signs in to its web pages as the admin and reads the hook's page
 * (`/{owner}/{repo}/settings/hooks/{id}`), which Gitea renders from its hook_task table.
 */
export async function giteaHookDeliveries(
  gitea: GiteaAccess,
  repo: GiteaRepository,
  hookId: number,
): Promise<GiteaHookDelivery[]> {
  const cookie = await giteaSignIn(gitea);
  const page = `${gitea.url}/${repo.fullName}/settings/hooks/${hookId}`;
  const res = await fetch(page, { headers: { cookie }, redirect: "manual" });
  const html = await res.text();
  if (res.status !== 200) throw new Error(`Gitea GET ${page}: ${res.status} ${html.slice(0, 300)}`);
  return parseHookHistory(html);
}

/** Signs in to Gitea's web pages as the admin; resolves with the session's Cookie header. */
async function giteaSignIn(gitea: GiteaAccess): Promise<string> {
  const form = new URLSearchParams({ user_name: gitea.adminUser.name, password: gitea.adminUser.password });
  const res = await fetch(`${gitea.url}/user/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
    redirect: "manual",
  });
  await res.text();
  // A signed-in session is a redirect away from the form; a wrong password shows the form again (200).
  if (res.status !== 303 && res.status !== 302) throw new Error(`signing in to Gitea failed: ${res.status}`);
  return cookieHeader(res.headers.getSetCookie());
}

/**
 * The Cookie header a browser would send after these Set-Cookie headers: the last value of each name (Gitea sets its
 * session cookie twice when it renews the session at sign-in), without the cookies they remove. Pure.
 */
export function cookieHeader(setCookies: readonly string[]): string {
  const jar = new Map<string, string>();
  for (const header of setCookies) {
    const [pair = "", ...attributes] = header.split(";");
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const name = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    const removed = value === "" || attributes.some((a) => /^\s*max-age\s*=\s*(0|-\d+)\s*$/i.test(a));
    if (removed) jar.delete(name);
    else jar.set(name, value);
  }
  return [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#34": '"', "#39": "'", "#x27": "'" };

function unescapeHtml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#34|#39|#x27);/g, (_, name: string) => ENTITIES[name] ?? "");
}

/**
 * The deliveries on a hook's page (templates/repo/settings/webhook/history.tmpl of Gitea v1.26.0): per delivery a
 * panel `info-<id>` after a button naming its UUID, its answer's status in a green (succeeded) or red label, and the
 * request's headers, the payload, the answer's headers and body in four <pre class="webhook-info"> blocks. Pure.
 */
export function parseHookHistory(html: string): GiteaHookDelivery[] {
  const deliveries: GiteaHookDelivery[] = [];
  const button = /data-panel="#info-(\d+)">([^<]+)<\/button>/g;
  const starts = [...html.matchAll(button)];
  starts.forEach((match, i) => {
    const end = starts[i + 1]?.index ?? html.length;
    const panel = html.slice(match.index ?? 0, end);
    const label = /<span class="ui (green|red) label">\s*(\d+)/.exec(panel);
    const pres = [...panel.matchAll(/<pre class="webhook-info">([\s\S]*?)<\/pre>/g)].map((m) => m[1] ?? "");
    const event = /<strong>X-Gitea-Event:<\/strong>\s*([\w-]+)/.exec(panel)?.[1] ?? "";
    deliveries.push({
      uuid: (match[2] ?? "").trim(),
      event,
      ...(label ? { status: Number(label[2]) } : {}),
      succeeded: label?.[1] === "green",
      requestBody: unescapeHtml(pres[1] ?? ""),
      responseBody: unescapeHtml(pres[3] ?? ""),
    });
  });
  return deliveries;
}
