/**
 * What the pipelines service's RPC groups share: its dependencies, the pipeline lookup, the announcement of a
 * change, and `change`, the one way a change a build depends on is made.
 */

import { Code, ConnectError } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import { PipelineChangedSchema } from "@conveyor/proto/pipelines";
import {
  type Client,
  createKeyedLock,
  type EventPublisher,
  type Fences,
  notFound,
  type Outbox,
  pipelineFence,
} from "@conveyor/runtime";
import type { PipelineDoc, PipelinesRepository } from "../store/pipelines-repository.js";
import type { ScheduleRepository } from "../store/schedule-repository.js";
import { pipelineEventMessage } from "./pipeline-message.js";

/** What the pipelines service is made of. */
export interface PipelinesServiceDeps {
  repo: PipelinesRepository;
  /** Pipeline schedules (rpc/schedules-rpc.ts). */
  schedules: ScheduleRepository;
  events: EventPublisher;
  /** Holds deletion events until JetStream has them (createPipelinesOutbox). */
  outbox: Outbox;
  /** Clusters belong to the agents service; a pipeline's cluster must exist in its organization. */
  clusters: Pick<Client<typeof AgentsService>, "getCluster">;
  /**
   * Where each change a build depends on is announced before it is written (version fences in @conveyor/runtime),
   * so that the builds service can trust a cached copy of a pipeline. Absent in tests without NATS.
   */
  fences?: Pick<Fences, "raise">;
  now?: () => Date;
}

/** How often a change is tried again when another process changed the pipeline between its read and its write. */
const MAX_CHANGE_ATTEMPTS = 5;

/** A change that kept meeting another process's changes of the same pipeline. */
export const changedMeanwhile = () =>
  new ConnectError("The pipeline kept changing while this change was made: try again.", Code.Aborted);

/** The dependencies and helpers every RPC group of the pipelines service works with; one per service. */
export function createPipelinesContext(deps: PipelinesServiceDeps) {
  const { repo, events } = deps;
  const now = deps.now ?? (() => new Date());
  // Serializes read-check-write sections per pipeline; see createKeyedLock for why conditional updates alone are
  // not enough on FerretDB.
  const withLock = createKeyedLock();

  const requirePipeline = async (organizationId: string, ref: string): Promise<PipelineDoc> => {
    const pipeline = ref === "" ? null : await repo.find(organizationId, ref);
    if (!pipeline) throw notFound("pipeline");
    return pipeline;
  };

  const publishChanged = (subject: string, p: PipelineDoc) =>
    events.publish(subject, PipelineChangedSchema, { pipeline: pipelineEventMessage(p) });

  /**
   * Makes a change a build's admission or plan depends on, under the pipeline's lock: reads the pipeline, checks the
   * change against it (`plan` throws when it cannot be made, and returns its write), raises the pipeline's fence to
   * the version the change will carry, then writes on the version read. The write answers null when the pipeline was
   * not in the state the change needs, or at another version: another process changed it in between, and the change
   * is planned again on what it wrote. `refused` says why a change cannot be made to `latest`.
   */
  const change = (
    organizationId: string,
    ref: string,
    plan: (current: PipelineDoc) => Promise<(version: number) => Promise<PipelineDoc | null>>,
    refused: (latest: PipelineDoc) => Error,
  ): Promise<PipelineDoc> =>
    withLock(ref, async () => {
      for (let attempt = 1; ; attempt++) {
        const current = await requirePipeline(organizationId, ref);
        const write = await plan(current);
        const version = current.version ?? 0;
        await deps.fences?.raise(pipelineFence(current._id), version + 1);
        const written = await write(version);
        if (written) return written;
        const latest = await requirePipeline(organizationId, ref);
        if ((latest.version ?? 0) === version || attempt >= MAX_CHANGE_ATTEMPTS) throw refused(latest);
      }
    });

  return { ...deps, now, withLock, requirePipeline, publishChanged, change };
}

export type PipelinesContext = ReturnType<typeof createPipelinesContext>;
