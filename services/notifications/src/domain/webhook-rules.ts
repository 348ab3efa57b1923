import { isWebhookEvent, WEBHOOK_EVENTS } from "./event-names.js";

/** Bounds of a webhook's fields (docs/limits.md). */
export const WEBHOOK_LIMITS = { urlChars: 2048, events: WEBHOOK_EVENTS.length, pipelines: 100, descriptionChars: 500 };

export type TokenMode = "token" | "signature";

export interface WebhookFields {
  url: string;
  events: string[];
  pipelineIds: string[];
  tokenMode: TokenMode;
  description: string;
}

export interface FieldProblem {
  field: string;
  code: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Checks a webhook's fields, naming each field that is wrong (the REST names: webhook_url, events, pipeline_ids,
 * token_mode, description). Addresses are checked again, on every connection, when deliveries are sent
 * (docs/security.md#outbound-requests); here only the form: an http(s) URL without credentials. Pure.
 */
export function webhookProblems(f: Partial<WebhookFields>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (f.url !== undefined) {
    let url: URL | null = null;
    try {
      url = new URL(f.url);
    } catch {
      problems.push({ field: "webhook_url", code: "must be an http or https URL" });
    }
    if (url) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        problems.push({ field: "webhook_url", code: "must be an http or https URL" });
      } else if (url.username || url.password) {
        problems.push({ field: "webhook_url", code: "must not hold credentials" });
      } else if (f.url.length > WEBHOOK_LIMITS.urlChars) {
        problems.push({ field: "webhook_url", code: `must be at most ${WEBHOOK_LIMITS.urlChars} characters` });
      }
    }
  }
  if (f.events !== undefined) {
    const unknown = f.events.find((e) => !isWebhookEvent(e));
    if (f.events.length === 0) problems.push({ field: "events", code: "must name at least one event" });
    else if (unknown !== undefined) {
      problems.push({ field: "events", code: `has an unknown event "${unknown.slice(0, 100)}"` });
    } else if (new Set(f.events).size !== f.events.length) {
      problems.push({ field: "events", code: "names an event twice" });
    }
  }
  if (f.pipelineIds !== undefined) {
    if (f.pipelineIds.length > WEBHOOK_LIMITS.pipelines) {
      problems.push({ field: "pipeline_ids", code: `must name at most ${WEBHOOK_LIMITS.pipelines} pipelines` });
    } else if (f.pipelineIds.some((id) => !UUID.test(id))) {
      problems.push({ field: "pipeline_ids", code: "must be pipeline UUIDs" });
    }
  }
  if (f.tokenMode !== undefined && f.tokenMode !== "token" && f.tokenMode !== "signature") {
    problems.push({ field: "token_mode", code: 'must be "token" or "signature"' });
  }
  if (f.description !== undefined && f.description.length > WEBHOOK_LIMITS.descriptionChars) {
    problems.push({ field: "description", code: `must be at most ${WEBHOOK_LIMITS.descriptionChars} characters` });
  }
  return problems;
}
