import { createInsertBatcher, MAX_MARKS } from "@conveyor/runtime";
import type { AnyBulkWriteOperation, Collection, Db } from "mongodb";

/** The connection states of an agent (docs/compatibility.md#agent-connection-states). */
export type ConnectionState = "never_connected" | "connected" | "disconnected" | "stopping" | "stopped" | "lost";

/** States in which an agent is alive: it may ping, and it counts in metrics and lists. */
export const LIVE_STATES: readonly ConnectionState[] = ["never_connected", "connected", "stopping"];

/** A registered agent. */
export interface AgentDoc {
  _id: string;
  organizationId: string;
  clusterId: string | null;
  tokenId: string;
  /** SHA-256 of its access token. */
  accessTokenHash: string;
  name: string;
  hostname: string;
  os: string;
  arch: string;
  version: string;
  build: string;
  userAgent: string;
  ipAddress: string;
  metaData: string[];
  queue: string;
  priority: number | null;
  connectionState: ConnectionState;
  /** The job it holds (assigned, running or finishing), or null when idle. */
  currentJobId: string | null;
  paused: boolean;
  pausedNote: string | null;
  pausedAt: Date | null;
  /** The user who paused it over REST; null when it paused itself from a job. Absent on older agents. */
  pausedBy?: PausedBy | null;
  /** How long its pause lasts from pausedAt; null for no end. Absent on older agents. */
  pausedTimeoutInMinutes?: number | null;
  stopRequested: boolean;
  pid: number;
  machineId: string;
  ignoreInDispatches: boolean;
  createdAt: Date;
  connectedAt: Date | null;
  disconnectedAt: Date | null;
  lostAt: Date | null;
  stoppedAt: Date | null;
  lastSeenAt: Date;
  lastJobFinishedAt: Date | null;
  /** The marks of its latest writes announced through the outbox (events/agent-events.ts); absent before any. */
  eventMarks?: string[];
}

/** The user who paused an agent, as REST shows them. */
export interface PausedBy {
  id: string;
  name: string;
  email: string;
  avatarUrl: string;
  createdAt: Date | null;
}

/** A job token: valid from the agent's accept until the job finishes. */
export interface JobTokenDoc {
  _id: string;
  hash: string;
  jobId: string;
  buildId: string;
  agentId: string;
  organizationId: string;
  clusterId: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

/** The fields of an agent an update may change. */
export type AgentUpdate = Partial<
  Pick<
    AgentDoc,
    | "connectionState"
    | "currentJobId"
    | "paused"
    | "pausedNote"
    | "pausedAt"
    | "pausedBy"
    | "pausedTimeoutInMinutes"
    | "stopRequested"
    | "userAgent"
    | "ipAddress"
    | "connectedAt"
    | "disconnectedAt"
    | "lostAt"
    | "stoppedAt"
    | "lastSeenAt"
    | "lastJobFinishedAt"
  >
>;

/** What an update requires of the agent as it is stored (compare-and-set). */
export interface AgentGuard {
  connectionStates?: readonly ConnectionState[];
  currentJobId?: string | null;
  paused?: boolean;
}

/** Agents alive in an organization, counted by queue and whether they hold a job. */
export interface QueueAgentCount {
  queue: string;
  busy: boolean;
  count: number;
}

/** Persistence of agents and job tokens. */
export interface AgentRepository {
  insertAgent(agent: AgentDoc): Promise<void>;
  findAgent(id: string): Promise<AgentDoc | null>;
  findAgentByTokenHash(hash: string): Promise<AgentDoc | null>;
  /**
   * Applies `update` if the agent still matches `guard`; returns the updated agent or null. With `mark`, the same
   * command appends it to the agent's `eventMarks` (events/agent-events.ts), which keep their latest MAX_MARKS.
   */
  updateAgent(id: string, update: AgentUpdate, guard?: AgentGuard, mark?: string): Promise<AgentDoc | null>;
  /**
   * Raises each agent's lastSeenAt to at least the given time, in one round trip: the agents given the same time are
   * one statement (liveness.ts rounds the times so that most are).
   */
  touchAgents(seen: ReadonlyMap<string, Date>): Promise<void>;
  /** Alive agents not seen since `before`, and lost agents still holding a job, oldest first. */
  silentAgents(before: Date, limit: number): Promise<AgentDoc[]>;
  /** An organization's alive agents by name, optionally filtered; one more than `limit` tells that more follow. */
  listAgents(
    organizationId: string,
    filter: { name?: string; hostname?: string; version?: string },
    skip: number,
    limit: number,
  ): Promise<AgentDoc[]>;
  /** Connected agents of an organization (of one cluster, with `clusterId`), counted by queue and busy or idle. */
  countAgents(organizationId: string, clusterId?: string): Promise<QueueAgentCount[]>;
  /** Connected agents of a cluster's queue holding no job, at most `limit`. */
  idleAgentsOfQueue(organizationId: string, clusterId: string, queue: string, limit: number): Promise<AgentDoc[]>;
  insertJobToken(token: JobTokenDoc): Promise<void>;
  findJobTokenByHash(hash: string): Promise<JobTokenDoc | null>;
  /** Revokes every token of a job. */
  revokeJobTokens(jobId: string, at: Date): Promise<void>;
}

/** The marks beyond the latest MAX_MARKS, oldest first: those a marked write removes after appending its own. */
export const overflowMarks = (marks: readonly string[]): string[] =>
  marks.slice(0, Math.max(0, marks.length - MAX_MARKS));

/** Statements of sightings per bulk command. */
const TOUCH_BATCH = 50;
/** The most agents one statement of sightings names. */
const TOUCH_GROUP = 200;

/** Escapes a user's text for a literal match inside a regular expression. */
function literal(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoAgentRepository(db: Db): Promise<AgentRepository> {
  const agents: Collection<AgentDoc> = db.collection("agents");
  const jobTokens: Collection<JobTokenDoc> = db.collection("job_tokens");
  await Promise.all([
    agents.createIndex({ accessTokenHash: 1 }, { unique: true, name: "access_token_unique" }),
    agents.createIndex({ organizationId: 1, connectionState: 1, name: 1 }, { name: "org_state_name" }),
    agents.createIndex({ connectionState: 1, lastSeenAt: 1 }, { name: "state_last_seen" }),
    jobTokens.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
    jobTokens.createIndex({ jobId: 1 }, { name: "job" }),
  ]);

  const newJobTokens = createInsertBatcher<JobTokenDoc>((docs) => jobTokens.insertMany(docs, { ordered: false }));

  return {
    insertAgent: async (agent) => {
      await agents.insertOne(agent);
    },
    findAgent: (id) => agents.findOne({ _id: id }),
    findAgentByTokenHash: (hash) => agents.findOne({ accessTokenHash: hash }),
    async updateAgent(id, update, guard = {}, mark) {
      const updated = await agents.findOneAndUpdate(
        {
          _id: id,
          ...(guard.connectionStates ? { connectionState: { $in: [...guard.connectionStates] } } : {}),
          ...(guard.currentJobId !== undefined ? { currentJobId: guard.currentJobId } : {}),
          ...(guard.paused !== undefined ? { paused: guard.paused } : {}),
        },
        // Appended, not set from the writer's copy: a cached copy may lack a mark another process just wrote, whose
        // event the relay publishes only while the mark is there.
        mark === undefined ? { $set: update } : { $set: update, $push: { eventMarks: mark } },
        { returnDocument: "after" },
      );
      const old = updated?.eventMarks ? overflowMarks(updated.eventMarks) : [];
      if (!updated || old.length === 0) return updated;
      // The oldest marks beyond MAX_MARKS go (FerretDB v1 has no $push $slice); named, so a repeat removes nothing more.
      await agents.updateOne({ _id: id }, { $pullAll: { eventMarks: old } });
      return { ...updated, eventMarks: updated.eventMarks?.filter((m) => !old.includes(m)) };
    },
    async touchAgents(seen) {
      // One statement per time (and TOUCH_GROUP agents): the patched FerretDB writes a statement's documents in one
      // transaction (deploy/ferretdb/update-batches.patch), where each agent alone was one, with its WAL sync.
      const byTime = new Map<number, string[]>();
      for (const [id, at] of seen) {
        const ids = byTime.get(at.getTime());
        if (ids) ids.push(id);
        else byTime.set(at.getTime(), [id]);
      }
      const ops: AnyBulkWriteOperation<AgentDoc>[] = [...byTime].flatMap(([time, ids]) => {
        const statements: AnyBulkWriteOperation<AgentDoc>[] = [];
        for (let i = 0; i < ids.length; i += TOUCH_GROUP) {
          statements.push({
            updateMany: {
              filter: { _id: { $in: ids.slice(i, i + TOUCH_GROUP) } },
              update: { $max: { lastSeenAt: new Date(time) } },
            },
          });
        }
        return statements;
      });
      // In bounded batches: an unpatched FerretDB holds a connection per statement of an update command until the
      // command ends, and hangs past 100 (deploy/ferretdb/update-statements.patch).
      for (let i = 0; i < ops.length; i += TOUCH_BATCH) {
        await agents.bulkWrite(ops.slice(i, i + TOUCH_BATCH), { ordered: false });
      }
    },
    silentAgents: (before, limit) =>
      agents
        .find({
          $or: [
            { connectionState: { $in: [...LIVE_STATES] }, lastSeenAt: { $lt: before } },
            { connectionState: "lost", currentJobId: { $ne: null } },
          ],
        })
        .sort({ lastSeenAt: 1 })
        .limit(limit)
        .toArray(),
    listAgents(organizationId, filter, skip, limit) {
      const contains = (text: string) => ({ $regex: literal(text), $options: "i" });
      return agents
        .find({
          organizationId,
          connectionState: { $in: [...LIVE_STATES] },
          ...(filter.name ? { name: contains(filter.name) } : {}),
          ...(filter.hostname ? { hostname: contains(filter.hostname) } : {}),
          ...(filter.version ? { version: { $regex: `^${literal(filter.version)}` } } : {}),
        })
        .sort({ organizationId: 1, name: 1, _id: 1 })
        .skip(skip)
        .limit(limit)
        .toArray();
    },
    idleAgentsOfQueue(organizationId, clusterId, queue, limit) {
      // The organization's connected agents (index-served, as countAgents reads them), filtered on the rest.
      return agents
        .find({ organizationId, clusterId, connectionState: "connected", queue, currentJobId: null })
        .limit(limit)
        .toArray();
    },
    async countAgents(organizationId, clusterId) {
      // Read with a projection and counted here: one index-served read of the organization's live agents
      // (FerretDB v1's $group takes no expressions, which "busy" needs).
      const rows = await agents
        .find(
          { organizationId, ...(clusterId ? { clusterId } : {}), connectionState: { $in: ["connected", "stopping"] } },
          { projection: { _id: 0, queue: 1, currentJobId: 1 } },
        )
        .toArray();
      const counts = new Map<string, QueueAgentCount>();
      for (const row of rows) {
        const busy = row.currentJobId !== null && row.currentJobId !== undefined;
        const key = `${busy ? 1 : 0}${row.queue}`;
        const entry = counts.get(key) ?? { queue: row.queue, busy, count: 0 };
        entry.count++;
        counts.set(key, entry);
      }
      return [...counts.values()];
    },
    // The tokens of jobs accepted at the same time (a build's parallel jobs) are one insert (group commit).
    insertJobToken: (token) => newJobTokens.insert([token]),
    findJobTokenByHash: (hash) => jobTokens.findOne({ hash }),
    async revokeJobTokens(jobId, at) {
      await jobTokens.updateMany({ jobId, revokedAt: null }, { $set: { revokedAt: at } });
    },
  };
}
