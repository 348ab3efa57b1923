import { generateKeyPairSync, verify } from "node:crypto";
import {
  createGithubAppTokens,
  GithubAppError,
  githubAppJwt,
  githubAppProblem,
  type OutboundCall,
} from "./github-app.js";

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const app = { appId: "4242", privateKey: pem };
const signal = new AbortController().signal;

describe("githubAppJwt", () => {
  it("is an RS256 token the App's public key verifies, issued a minute back, valid nine minutes", () => {
    const now = new Date("2026-05-01T12:00:00Z");
    const jwt = githubAppJwt(app, now);
    const [header, payload, signature] = jwt.split(".");
    expect(JSON.parse(Buffer.from(header ?? "", "base64url").toString())).toEqual({ alg: "RS256", typ: "JWT" });
    const seconds = now.getTime() / 1000;
    expect(JSON.parse(Buffer.from(payload ?? "", "base64url").toString())).toEqual({
      iat: seconds - 60,
      exp: seconds + 540,
      iss: "4242",
    });
    const valid = verify(
      "sha256",
      Buffer.from(`${header}.${payload}`),
      publicKey,
      Buffer.from(signature ?? "", "base64url"),
    );
    expect(valid).toBe(true);
  });
});

describe("githubAppProblem", () => {
  it("takes a numeric id and an RSA key in PEM", () => {
    expect(githubAppProblem("4242", pem)).toBeNull();
    expect(githubAppProblem("", pem)?.field).toBe("app_id");
    expect(githubAppProblem("12a", pem)?.field).toBe("app_id");
    expect(githubAppProblem("1", "-----BEGIN RSA PRIVATE KEY-----\nnope\n-----END RSA PRIVATE KEY-----")).toEqual({
      field: "private_key",
      code: "is not a private key in PEM",
    });
  });
});

function fakeGithub(answers: { installation?: number; token?: number } = {}) {
  const calls: Array<{ method: string; url: string; auth: string }> = [];
  let issued = 0;
  const call: OutboundCall = async (r) => {
    calls.push({ method: r.method, url: r.url, auth: r.headers.Authorization ?? "" });
    if (r.method === "GET") {
      const status = answers.installation ?? 200;
      return { status, body: status === 200 ? JSON.stringify({ id: 77 }) : '{"message":"Not Found"}' };
    }
    const status = answers.token ?? 201;
    issued++;
    return {
      status,
      body: status === 201 ? JSON.stringify({ token: `ghs_${issued}`, expires_at: "2026-05-01T13:00:00Z" }) : "{}",
    };
  };
  return { calls, call };
}

describe("installation tokens", () => {
  const connection = { id: "c-1", apiUrl: "https://api.github.com" };
  const repo = { owner: "acme", name: "widgets" };

  it("finds the App's installation on the repository and exchanges the App's token for the installation's", async () => {
    const github = fakeGithub();
    const tokens = createGithubAppTokens({ call: github.call, now: () => new Date("2026-05-01T12:00:00Z") });
    expect(await tokens.token(connection, app, repo, signal)).toBe("ghs_1");
    expect(github.calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      "GET https://api.github.com/repos/acme/widgets/installation",
      "POST https://api.github.com/app/installations/77/access_tokens",
    ]);
    expect(github.calls.every((c) => /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/.test(c.auth))).toBe(true);
  });

  it("keeps a token until five minutes before it expires, per connection and repository", async () => {
    const github = fakeGithub();
    let now = new Date("2026-05-01T12:00:00Z");
    const tokens = createGithubAppTokens({ call: github.call, now: () => now });
    await tokens.token(connection, app, repo, signal);
    expect(await tokens.token(connection, app, { owner: "ACME", name: "Widgets" }, signal)).toBe("ghs_1");
    expect(await tokens.token(connection, app, { owner: "acme", name: "other" }, signal)).toBe("ghs_2");
    now = new Date("2026-05-01T12:56:00Z");
    expect(await tokens.token(connection, app, repo, signal)).toBe("ghs_3");
    tokens.forget("c-1");
    expect(await tokens.token(connection, app, repo, signal)).toBe("ghs_4");
  });

  it("says an App not installed on the repository is final, and GitHub's 5xx worth retrying", async () => {
    const missing = createGithubAppTokens({ call: fakeGithub({ installation: 404 }).call, now: () => new Date() });
    const err = await missing.token(connection, app, repo, signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GithubAppError);
    expect(err).toMatchObject({ retryable: false, responseCode: 404 });
    expect((err as Error).message).toBe("the GitHub App 4242 is not installed on acme/widgets");
    const down = createGithubAppTokens({ call: fakeGithub({ token: 502 }).call, now: () => new Date() });
    await expect(down.token(connection, app, repo, signal)).rejects.toMatchObject({
      retryable: true,
      responseCode: 502,
    });
  });
});
