/**
 * What a webhook delivery comes to, as the inbox records it before answering (webhooks/webhook-inbox.ts): the builds
 * to create (each with an id derived from the delivery, so that doing it again finds the same build), the branches
 * whose builds to cancel, the pull requests whose state to remember, and why events built nothing. Pure.
 */
import { createHash } from "node:crypto";
import type { PullRequestState, WebhookBuild } from "@conveyor/ci-rules";
import { TEXT_LIMITS } from "@conveyor/runtime";
import { buildInputProblems } from "./build-input.js";

/** A build a delivery creates, under the id it will have. */
export interface PlannedBuild {
  id: string;
  build: WebhookBuild;
}

/** Everything a delivery implies, decided when it was received. */
export interface DeliveryPlan {
  builds: PlannedBuild[];
  cancels: Array<{ branch: string; reason: string }>;
  pullRequests: Array<PullRequestState & { number: string }>;
  /** Why events of the delivery built nothing. */
  reasons: string[];
}

/** What carrying out a plan did. */
export interface DeliveryOutcome {
  /** The plan's builds as created (in the plan's order), with their numbers. */
  builds: Array<{ id: string; number: number }>;
  /** How many unfinished builds were canceled. */
  canceled: number;
  /** Why planned builds could not be created after all (the pipeline was archived meanwhile, …). */
  reasons: string[];
}

/**
 * The key a delivery is recorded under: the pipeline, the forge and the forge's delivery id, or, when the forge sent
 * none, the hash of the event and payload (a redelivery repeats both).
 */
export function deliveryKey(pipelineId: string, forge: string, deliveryId: string, event: string, payload: Uint8Array) {
  const id =
    deliveryId !== ""
      ? deliveryId
      : `sha256:${createHash("sha256").update(event).update("\n").update(payload).digest("hex")}`;
  return `${pipelineId}:${forge}:${id}`;
}

/** The id of the `index`th build of the delivery recorded under `key`: a UUID (version 8) made of their hash. */
export function webhookBuildId(key: string, index: number): string {
  const hex = createHash("sha256").update(`webhook:${key}:${index}`).digest("hex");
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 3) | 8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * A build from a forge made to fit what a build may hold: a message longer than a build's is cut (at a character,
 * saying so), author names and emails too, and control characters there are replaced; a commit, branch or label no build may hold (a control character, a
 * length past the bounds) is a problem, which the delivery reports instead of the build.
 */
export function fitWebhookBuild(build: WebhookBuild): { build: WebhookBuild } | { problem: string } {
  const fitted: WebhookBuild = {
    ...build,
    message: cutBytes(build.message.replace(CONTROL_BUT_WHITESPACE, "\uFFFD"), TEXT_LIMITS.messageBytes),
    author: build.author && { name: oneLine(build.author.name), email: oneLine(build.author.email) },
  };
  const problems = buildInputProblems({
    commit: fitted.commit,
    branch: fitted.branch,
    message: fitted.message,
    env: fitted.env,
    metaData: {},
    pullRequestId: fitted.pullRequest?.id ?? "",
    pullRequestBaseBranch: fitted.pullRequest?.base ?? "",
    pullRequestRepository: fitted.pullRequest?.repository ?? "",
    pullRequestLabels: fitted.pullRequest?.labels ?? [],
    ...(fitted.author ? { author: fitted.author } : {}),
  });
  if (problems.length === 0) return { build: fitted };
  const described = problems.map((p) => `${p.field} ${p.code}`).join("; ");
  return { problem: `The ${build.source.event} could not be built: its ${described}.` };
}

/** Control characters but tab, line feed and carriage return, which a message may not hold. */
const CONTROL_BUT_WHITESPACE = /(?![\t\n\r])\p{Cc}/gu;

/** A name as a build holds it: control characters replaced, at most TEXT_LIMITS.name characters. */
const oneLine = (text: string) => [...text.replace(/\p{Cc}/gu, "\uFFFD")].slice(0, TEXT_LIMITS.name).join("");

const NOTE = "\n\n[message cut: it was longer than a build's message may be]";

/** `text` cut to at most `max` UTF-8 bytes at a character boundary, with a note when it was cut. */
function cutBytes(text: string, max: number): string {
  if (Buffer.byteLength(text, "utf8") <= max) return text;
  let cut = "";
  let bytes = Buffer.byteLength(NOTE, "utf8");
  for (const char of text) {
    bytes += Buffer.byteLength(char, "utf8");
    if (bytes > max) break;
    cut += char;
  }
  return cut + NOTE;
}
