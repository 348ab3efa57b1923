import type { Client } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Env, envValue } from "../host/paths.js";
import type { StackInfo } from "../stack/stack-info.js";

/**
 * The address people open the pages at, as the gateway makes its web_url fields: WEB_URL, else PUBLIC_URL, else the
 * gateway's own address.
 */
export function stackWebUrl(info: Pick<StackInfo, "apiUrl">, env: Env): string {
  return (envValue(env, "WEB_URL") ?? envValue(env, "PUBLIC_URL") ?? info.apiUrl).replace(/\/+$/, "");
}

/**
 * A one-time sign-in link for the bootstrap admin (docs/pages.md#signing-in), made at every `npm start`: the one
 * printed before may have been used. Valid for identity's default time (15 minutes).
 */
export async function adminSignInLink(
  identity: Pick<Client<typeof IdentityService>, "createSignInLink">,
  webUrl: string,
  userId: string,
): Promise<{ url: string; expiresAt: string | null }> {
  const { secret, expiresAt } = await identity.createSignInLink({ userId });
  return { url: `${webUrl}/login/link/${secret}`, expiresAt: isoTime(expiresAt) };
}
