/** A delivery's payload as webhook events, by its forge's parser (docs/webhooks.md). Pure. */
import { parseBitbucketEvent } from "./bitbucket-events.js";
import { parseGiteaEvent } from "./gitea-events.js";
import { parseGitHubEvent } from "./github-events.js";
import { parseGitLabEvent } from "./gitlab-events.js";
import { PayloadProblem } from "./payload-reader.js";
import type { Forge, ParsedDelivery } from "./webhook-event.js";

const PARSERS: Record<Forge, (event: string, payload: unknown) => ParsedDelivery> = {
  github: parseGitHubEvent,
  gitlab: parseGitLabEvent,
  bitbucket: parseBitbucketEvent,
  gitea: parseGiteaEvent,
};

/**
 * What a delivery of `event` from `forge` carries, from its JSON text: its events, a ping, why it builds nothing, or
 * what is wrong with it (text that is not JSON, a field its event needs missing or of the wrong type). Never throws.
 */
export function parseDelivery(forge: Forge, event: string, json: string): ParsedDelivery {
  let payload: unknown;
  try {
    payload = JSON.parse(json);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    return { kind: "invalid", problem: "the payload is not JSON: send deliveries with Content-Type application/json" };
  }
  try {
    return PARSERS[forge](event, payload);
  } catch (err) {
    if (err instanceof PayloadProblem) return { kind: "invalid", problem: err.message };
    throw err;
  }
}
