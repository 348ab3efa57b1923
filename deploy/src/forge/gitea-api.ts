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
