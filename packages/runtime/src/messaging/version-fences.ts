import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ensureStream } from "./nats.js";

/**
 * A version fence is a per-key version number kept in JetStream that writers raise before a change, so that readers
 * can tell whether their copy is current. It only ever grows, and is the last message of the key's subject in one
 * stream. A writer raises a key's fence to the version it is about to write, and writes only once JetStream has it;
 * a reader holding a copy of version `v` asks for the fence: when it is at most `v`, no change was acknowledged since
 * the copy was read (every such change raised the fence first), so the copy is current for a request that arrived
 * before the read. One small JetStream get, where reading the thing itself again may cost an RPC and a query.
 *
 * A raise never lowers a fence: it publishes only on top of the message it read (JetStream's expected last subject
 * sequence), so a raise that was slow to land cannot overwrite a higher one made meanwhile. A raise whose write then
 * failed leaves the fence above the stored version: readers take their slow path until the next change catches up.
 */
export interface Fences {
  /** The key's fence: 0 when it was never raised. */
  read(key: string): Promise<number>;
  /** Raises the key's fence to at least `to`; resolves once JetStream stored it (or it stood there already). */
  raise(key: string, to: number): Promise<void>;
}

export const FENCES_STREAM = "CI_FENCES";

/**
 * The fence of a pipeline: raised by the pipelines service before each change a build's admission or plan depends on
 * (update, archive, unarchive, delete) to the version the change gives it (Pipeline.version).
 */
export const pipelineFence = (pipelineId: string) => `pipelines.${pipelineId}`;
const SUBJECT_PREFIX = "fences.";
/** How long one JetStream request of a fence may take: a read is on a request's path. */
const FENCE_TIMEOUT_MS = 1_000;
/** Raises of one key that collide with others in a row before giving up (each collision means another landed). */
const MAX_RAISE_ATTEMPTS = 10;

/** Keys are subject tokens joined by dots: letters, digits, `-` and `_`. */
const KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

const subjectOf = (key: string) => {
  if (!KEY.test(key)) throw new Error(`invalid fence key "${key}"`);
  return SUBJECT_PREFIX + key;
};

/** A fence's value as stored: its decimal digits. */
export const encodeFence = (n: number) => new TextEncoder().encode(String(n));
/** A stored fence's value; 0 for anything that is not a whole number of zero or more. */
export const decodeFence = (data: Uint8Array): number => {
  const n = Number(new TextDecoder().decode(data));
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
};

/** Opens the fences stream (creating it when missing). */
export async function openFences(nc: NatsConnection): Promise<Fences> {
  const jsm = await jetstreamManager(nc, { timeout: FENCE_TIMEOUT_MS });
  const js = jetstream(nc, { timeout: FENCE_TIMEOUT_MS });
  const info = await ensureStream(jsm, {
    name: FENCES_STREAM,
    subjects: [`${SUBJECT_PREFIX}>`],
    max_msgs_per_subject: 1,
    allow_direct: true,
  });
  // A direct get may be answered by a follower that lags: only on a stream of one replica. Elsewhere the leader.
  const direct = info.config.allow_direct && info.config.num_replicas <= 1;

  const last = async (subject: string, fromLeader: boolean) => {
    const query = { last_by_subj: subject };
    const msg =
      direct && !fromLeader
        ? await jsm.direct.getMessage(FENCES_STREAM, query)
        : await jsm.streams.getMessage(FENCES_STREAM, query);
    return msg ? { seq: msg.seq, value: decodeFence(msg.data) } : null;
  };

  return {
    async read(key) {
      return (await last(subjectOf(key), false))?.value ?? 0;
    },
    async raise(key, to) {
      const subject = subjectOf(key);
      for (let attempt = 1; ; attempt++) {
        const current = await last(subject, true);
        if (current && current.value >= to) return;
        try {
          await js.publish(subject, encodeFence(to), { expect: { lastSubjectSequence: current?.seq ?? 0 } });
          return;
        } catch (err) {
          const collided = err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
          if (!collided || attempt >= MAX_RAISE_ATTEMPTS) throw err;
        }
      }
    },
  };
}

/** Fences in memory, for unit tests. */
export function createMemoryFences(): Fences & { values: Map<string, number> } {
  const values = new Map<string, number>();
  return {
    values,
    async read(key) {
      return values.get(subjectOf(key)) ?? 0;
    },
    async raise(key, to) {
      const subject = subjectOf(key);
      values.set(subject, Math.max(values.get(subject) ?? 0, to));
    },
  };
}
