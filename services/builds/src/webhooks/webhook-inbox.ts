/**
 * The webhook inbox (docs/webhooks.md#delivery): a forge's delivery, which the gateway authenticated, is read by its
 * forge's parser, decided by ci-rules' build rules, and recorded (what it comes to, under a key made of the forge's
 * delivery id) before it is answered; then it is carried out: its pull requests' states remembered, its builds
 * created under ids derived from the delivery, a deleted branch's builds canceled. A redelivery finds the record
 * and does nothing again. A delivery recorded but not carried out (a failure, a process that died) keeps its lease
 * for LEASE_MS; then the relay, in any replica, takes it and carries it out, finding the builds already made by
 * their ids. So a delivery answered 2xx is never lost and never builds twice.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import {
  decideWebhookEvent,
  FORGES,
  type Forge,
  lookupsFor,
  parseDelivery,
  pullRequestStateOf,
  type WebhookEvent,
  type WebhookFacts,
  type WebhookPipeline,
  webhookSettings,
} from "@conveyor/ci-rules";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { invalidFields, notFound } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import type { BuildCreation } from "../creation/build-creation.js";
import type { CurrentPipelines } from "../creation/current-pipelines.js";
import {
  type DeliveryOutcome,
  type DeliveryPlan,
  deliveryKey,
  fitWebhookBuild,
  type PlannedBuild,
  webhookBuildId,
} from "../domain/webhook-plan.js";
import type { BuildCancel } from "../lifecycle/build-cancel.js";
import type { WebhookDelivery, WebhookDeliveryRepository } from "../store/webhook-delivery-repository.js";
import type { WebhookPullRequestRepository } from "../store/webhook-pull-request-repository.js";

/** Where the inbox keeps deliveries and the pull requests they told of. */
export interface WebhookInboxDeps {
  deliveries: WebhookDeliveryRepository;
  pullRequests: WebhookPullRequestRepository;
}

/** A delivery as the gateway hands it on, with the pipeline its webhook URL names. */
export interface ReceivedDelivery {
  pipeline: Pipeline | undefined;
  organizationSlug: string;
  forge: string;
  event: string;
  deliveryId: string;
  payload: Uint8Array;
}

/** What a delivery's answer says. */
export interface WebhookReceipt {
  redelivery: boolean;
  builds: Array<{ id: string; number: number; branch: string; commit: string }>;
  canceledBuilds: number;
  reasons: string[];
  pending: boolean;
}

/** How long the process that recorded (or took) a delivery has to carry it out before the relay may take it. */
export const LEASE_MS = 30_000;
/** How long a delivery done is remembered: a redelivery within it finds it and builds nothing again. */
export const RETENTION_MS = 7 * 24 * 3600_000;
/** Deliveries one relay pass carries out at most, and done deliveries one sweep removes at most. */
const RELAY_BATCH = 20;
const SWEEP_BATCH = 1_000;
/** Builds of a commit looked at to know where it was built. */
const COMMIT_BUILDS = 100;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The inbox: receive (the RPC's work), and relay and sweep (the duties main.ts runs on timers). */
export function createWebhookInbox(
  ctx: BuildsContext,
  parts: { creation: BuildCreation; cancel: BuildCancel; pipelines: CurrentPipelines },
  deps: WebhookInboxDeps,
) {
  const { repo, logger, now, withLock } = ctx;

  /** What the rules need to know of stored builds and pull requests for `event`. */
  const factsFor = async (pipeline: Pipeline, event: WebhookEvent): Promise<WebhookFacts> => {
    const { commit, pullRequestBranch } = lookupsFor(event);
    const [built, openPullRequest] = await Promise.all([
      commit
        ? repo.listBuilds(
            { organizationIds: [pipeline.organizationId], pipelineId: pipeline.id, commits: [commit] },
            0,
            COMMIT_BUILDS,
          )
        : [],
      pullRequestBranch ? deps.pullRequests.openFrom(pipeline.id, pullRequestBranch) : null,
    ]);
    return { commitBuiltOn: [...new Set(built.map((b) => b.branch))], openPullRequest };
  };

  /** What the delivery recorded under `key` comes to. */
  const planFor = async (
    events: WebhookEvent[],
    pipeline: Pipeline,
    organizationSlug: string,
    key: string,
  ): Promise<DeliveryPlan> => {
    const rules: WebhookPipeline = {
      id: pipeline.id,
      slug: pipeline.slug,
      defaultBranch: pipeline.defaultBranch,
      branchConfiguration: pipeline.branchConfiguration ?? null,
      organization: { id: pipeline.organizationId, slug: organizationSlug },
      settings: webhookSettings(pipeline.provider?.settings ?? {}),
    };
    const plan: DeliveryPlan = { builds: [], cancels: [], pullRequests: [], reasons: [] };
    for (const event of events) {
      if (event.kind === "pull_request") plan.pullRequests.push({ ...pullRequestStateOf(event), number: event.number });
      const decision = decideWebhookEvent(event, rules, await factsFor(pipeline, event));
      if (decision.kind === "nothing") plan.reasons.push(decision.reason);
      else if (decision.kind === "cancel") plan.cancels.push({ branch: decision.branch, reason: decision.reason });
      else {
        const fitted = fitWebhookBuild(decision.build);
        if ("problem" in fitted) plan.reasons.push(fitted.problem);
        else plan.builds.push({ id: webhookBuildId(key, plan.builds.length), build: fitted.build });
      }
    }
    return plan;
  };

  /** Creates a planned build, or finds it made already; a reason when it cannot be made any more. */
  const createPlanned = async (
    planned: PlannedBuild,
    pipeline: Pipeline | null,
    delivery: WebhookDelivery,
  ): Promise<{ id: string; number: number } | { reason: string }> => {
    const made = await repo.findBuildById(planned.id);
    if (made) return { id: made.id, number: made.number };
    const what = `The build of ${planned.build.branch} at ${planned.build.commit.slice(0, 10)}`;
    if (!pipeline) return { reason: `${what} was not created: the pipeline was deleted.` };
    if (pipeline.archivedAt) return { reason: `${what} was not created: the pipeline was archived.` };
    const { build } = planned;
    try {
      const created = await parts.creation.create({
        pipeline,
        organizationSlug: delivery.organizationSlug,
        creator: null,
        commit: build.commit,
        branch: build.branch,
        message: build.message,
        author: build.author,
        cleanCheckout: false,
        env: build.env,
        metaData: {},
        pullRequest: build.pullRequest,
        source: "webhook",
        tag: build.tag,
        sourceEvent: build.source.event,
        sourceAction: build.source.action || null,
        rebuiltFrom: null,
        id: planned.id,
      });
      return { id: created.build.id, number: created.build.number };
    } catch (err) {
      // Another process carried out the same delivery at the same time and stored the build first.
      if (!(err instanceof ConnectError && err.code === Code.AlreadyExists)) throw err;
      const stored = await repo.findBuildById(planned.id);
      if (!stored) throw err;
      return { id: stored.id, number: stored.number };
    }
  };

  /** Cancels the unfinished builds of a deleted branch; how many were canceled. */
  const cancelBranch = async (pipelineId: string, branch: string, reason: string): Promise<number> => {
    let canceled = 0;
    for (const build of await repo.unfinishedOnBranch(pipelineId, branch, Number.MAX_SAFE_INTEGER)) {
      await withLock(build.id, async () => {
        const current = await repo.findBuildById(build.id);
        if (!current || current.finishedAt || current.cancelRequested) return;
        await parts.cancel.cancel(current, reason);
        canceled++;
      });
    }
    return canceled;
  };

  /**
   * Does what a recorded delivery implies, for the pipeline as the receiver found it (or, for the relay, as it is
   * now); throws when something failed (the relay then tries again).
   */
  const carryOut = async (delivery: WebhookDelivery, received?: Pipeline): Promise<DeliveryOutcome> => {
    const { plan } = delivery;
    const outcome: DeliveryOutcome = { builds: [], canceled: 0, reasons: [] };
    for (const { number, ...state } of plan.pullRequests) {
      await deps.pullRequests.record(delivery.pipelineId, number, state, delivery.receivedAt);
    }
    if (plan.builds.length === 0 && plan.cancels.length === 0) return outcome;
    const pipeline = received ?? (await parts.pipelines.byId(delivery.organizationId, delivery.pipelineId));
    for (const planned of plan.builds) {
      const made = await createPlanned(planned, pipeline, delivery);
      if ("reason" in made) outcome.reasons.push(made.reason);
      else outcome.builds.push(made);
    }
    for (const { branch, reason } of plan.cancels) {
      outcome.canceled += await cancelBranch(delivery.pipelineId, branch, reason);
    }
    return outcome;
  };

  /** Carries out a delivery and records it done; when that fails (logged), the delivery waits for the relay. */
  const settle = async (delivery: WebhookDelivery, received?: Pipeline): Promise<WebhookDelivery> => {
    try {
      const outcome = await carryOut(delivery, received);
      const doneAt = now();
      await deps.deliveries.finish(delivery.id, outcome, doneAt);
      return { ...delivery, outcome, doneAt };
    } catch (err) {
      logger.warn(
        { err, delivery: delivery.id, attempts: delivery.attempts },
        "webhook delivery recorded but not carried out: the relay tries again once its lease lapses",
      );
      return delivery;
    }
  };

  /** Receives a delivery: reads it, records what it comes to, carries that out, and says what it did. */
  const receive = async (req: ReceivedDelivery): Promise<WebhookReceipt> => {
    if (!(FORGES as readonly string[]).includes(req.forge)) {
      throw invalidFields([{ field: "forge", code: `must be one of ${FORGES.join(", ")}` }]);
    }
    const forge = req.forge as Forge;
    let text: string;
    try {
      text = utf8.decode(req.payload);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      throw new ConnectError("The payload is not UTF-8 text.", Code.InvalidArgument);
    }
    const parsed = parseDelivery(forge, req.event, text);
    if (parsed.kind === "invalid") {
      throw new ConnectError(`This ${req.event} delivery cannot be read: ${parsed.problem}.`, Code.InvalidArgument);
    }
    if (parsed.kind === "ping") return nothingDone("Pong: deliveries to this URL reach the pipeline.");
    if (parsed.kind === "ignored") return nothingDone(parsed.reason);
    if (!req.pipeline) throw invalidFields([{ field: "pipeline", code: "is required" }]);
    const pipeline = await parts.pipelines.current(req.pipeline);
    if (!pipeline) throw notFound("pipeline");
    if (pipeline.archivedAt)
      return nothingDone("The pipeline is archived: deliveries build nothing until it is unarchived.");

    const id = deliveryKey(pipeline.id, forge, req.deliveryId, req.event, req.payload);
    const earlier = await deps.deliveries.find(id);
    if (earlier) return receiptOf(earlier, true);
    const at = now();
    const delivery: WebhookDelivery = {
      id,
      pipelineId: pipeline.id,
      organizationId: pipeline.organizationId,
      organizationSlug: req.organizationSlug,
      forge,
      event: req.event,
      receivedAt: at,
      plan: await planFor(parsed.events, pipeline, req.organizationSlug, id),
      leaseUntil: new Date(at.getTime() + LEASE_MS),
      attempts: 1,
      doneAt: null,
      outcome: null,
    };
    if (!(await deps.deliveries.insert(delivery))) {
      // The same delivery arrived twice at once and the other was recorded first.
      const other = await deps.deliveries.find(id);
      if (other) return receiptOf(other, true);
      throw new ConnectError("The delivery could not be recorded: try again.", Code.Unavailable);
    }
    const settled = await settle(delivery, pipeline);
    const receipt = receiptOf(settled, false);
    logger.info(
      {
        pipelineId: pipeline.id,
        forge,
        event: req.event,
        delivery: req.deliveryId,
        builds: receipt.builds.map((b) => b.number),
        canceled: receipt.canceledBuilds,
        reasons: receipt.reasons,
        pending: receipt.pending,
      },
      "webhook delivery received",
    );
    return receipt;
  };

  return {
    receive,

    /** Carries out deliveries whose lease lapsed before they were done; how many were taken. */
    async relay(): Promise<number> {
      let taken = 0;
      for (; taken < RELAY_BATCH; taken++) {
        const at = now();
        const delivery = await deps.deliveries.takeLapsed(at, new Date(at.getTime() + LEASE_MS));
        if (!delivery) break;
        const settled = await settle(delivery);
        if (settled.doneAt) logger.info({ delivery: delivery.id }, "webhook delivery carried out by the relay");
      }
      return taken;
    },

    /** Forgets deliveries done longer ago than RETENTION_MS; how many. */
    sweep: () => deps.deliveries.removeDoneBefore(new Date(now().getTime() - RETENTION_MS), SWEEP_BATCH),
  };
}

export type WebhookInbox = ReturnType<typeof createWebhookInbox>;

/** The answer of a delivery that records nothing (a ping, an event the rules do not read, an archived pipeline). */
function nothingDone(reason: string): WebhookReceipt {
  return { redelivery: false, builds: [], canceledBuilds: 0, reasons: [reason], pending: false };
}

/** The answer for a recorded delivery: what it made once done, what it will make while pending. */
function receiptOf(delivery: WebhookDelivery, redelivery: boolean): WebhookReceipt {
  const { plan, outcome } = delivery;
  const made = new Map((outcome?.builds ?? []).map((b) => [b.id, b.number]));
  const builds = plan.builds
    .filter((p) => !outcome || made.has(p.id))
    .map((p) => ({ id: p.id, number: made.get(p.id) ?? 0, branch: p.build.branch, commit: p.build.commit }));
  return {
    redelivery,
    builds,
    canceledBuilds: outcome?.canceled ?? 0,
    reasons: [...plan.reasons, ...(outcome?.reasons ?? [])],
    pending: delivery.doneAt === null,
  };
}
