/**
 * A delivery's proof that it comes from the forge the pipeline's webhook secret was given to (docs/webhooks.md):
 * GitHub's and Bitbucket's HMAC-SHA256 of the body (X-Hub-Signature-256, X-Hub-Signature: `sha256=<hex>`), Gitea's
 * and Forgejo's (X-Gitea-Signature, X-Forgejo-Signature: `<hex>`, or GitHub's header, which they send too), and
 * GitLab's secret token sent as it is (X-Gitlab-Token). Every comparison takes the same time however much of a
 * guess is right. Without a secret, the webhook URL's token alone authenticates a delivery.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { type Forge, type HeaderBag, header } from "@conveyor/ci-rules";

/** Whether two strings are equal, in a time that depends on neither (their SHA-256 digests are compared). */
export function safeEqual(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** Where each forge puts its signature, and how it is written. */
const SIGNATURES: Record<Exclude<Forge, "gitlab">, ReadonlyArray<{ header: string; prefix: string }>> = {
  github: [{ header: "X-Hub-Signature-256", prefix: "sha256=" }],
  bitbucket: [{ header: "X-Hub-Signature", prefix: "sha256=" }],
  gitea: [
    { header: "X-Forgejo-Signature", prefix: "" },
    { header: "X-Gitea-Signature", prefix: "" },
    { header: "X-Hub-Signature-256", prefix: "sha256=" },
  ],
};

/** Where each forge's settings take the secret, for the problem a person reads. */
const SECRET_FIELD: Record<Forge, string> = {
  github: "the GitHub webhook's Secret",
  gitlab: "the GitLab webhook's Secret token",
  bitbucket: "the Bitbucket webhook's Secret",
  gitea: "the webhook's Secret in Gitea or Forgejo",
};

/**
 * Why a delivery from `forge` is not proven to know the pipeline's webhook `secret`, or null when it is (or the
 * pipeline has no secret).
 */
export function signatureProblem(forge: Forge, headers: HeaderBag, body: Buffer, secret: string): string | null {
  if (secret === "") return null;
  const where = SECRET_FIELD[forge];
  if (forge === "gitlab") {
    const token = header(headers, "X-Gitlab-Token");
    if (token === "")
      return `This pipeline has a webhook secret, but the delivery has no X-Gitlab-Token: set it as ${where}.`;
    return safeEqual(token, secret) ? null : `X-Gitlab-Token is not the pipeline's webhook secret: check ${where}.`;
  }
  const found = SIGNATURES[forge].map((s) => ({ ...s, value: header(headers, s.header) })).find((s) => s.value !== "");
  if (!found) return `This pipeline has a webhook secret, but the delivery is not signed: set the secret as ${where}.`;
  const expected = found.prefix + createHmac("sha256", secret).update(body).digest("hex");
  if (safeEqual(found.value.toLowerCase(), expected)) return null;
  return `${found.header} does not match the body signed with the pipeline's webhook secret: check ${where}.`;
}
