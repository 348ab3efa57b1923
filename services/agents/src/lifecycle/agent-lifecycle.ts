import { randomBytes } from "node:crypto";
import type { RegisterAgentRequest } from "@conveyor/proto/agents";
import { CredentialRevokedSchema } from "@conveyor/proto/agents";
import { JobEventType } from "@conveyor/proto/builds";
import {
  type EventPublisher,
  failedPrecondition,
  hashSecret,
  invalidFields,
  type Logger,
  newId,
  newSecret,
  notFound,
  SUBJECTS,
} from "@conveyor/runtime";
import type { AgentsConfig } from "../config.js";
import { ACCESS_TOKEN_PREFIX, unauthenticated } from "../credentials/credentials.js";
import type { BuildsClient, JobHandoff } from "../dispatch/job-handoff.js";
import { parseTags, queueOf, tagsProblem } from "../domain/agent-tags.js";
import { registrationQueueProblem } from "../domain/cluster-queues.js";
import { type AgentDoc, LIVE_STATES } from "../store/agent-repository.js";
import type { ClusterRepository } from "../store/cluster-repository.js";
import type { AgentDirectory } from "./agent-directory.js";
import type { AgentPausing } from "./agent-pausing.js";
import type { Liveness } from "./liveness.js";

export interface AgentLifecycleDeps {
  clusters: ClusterRepository;
  directory: AgentDirectory;
  pausing: AgentPausing;
  liveness: Liveness;
  handoff: JobHandoff;
  builds: BuildsClient;
  events: EventPublisher;
  logger: Logger;
  now: () => Date;
  config: Pick<AgentsConfig, "pingIntervalS" | "heartbeatIntervalS" | "jobStatusIntervalS" | "lostAfterMs">;
  /** The keys of a cluster's queues (an agent of a cluster with queues must name one of them). */
  queueKeys: (organizationId: string, clusterId: string) => Promise<string[]>;
}

/** A header value without control characters (they would end up in REST answers and logs). */
function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, "");
}

/** What a ping tells a paused agent. */
function pausedMessage(agent: Pick<AgentDoc, "pausedNote">): string {
  return agent.pausedNote ? `Paused: ${agent.pausedNote}` : "";
}

/** What a ping tells an agent. */
export interface PingAnswer {
  action: "idle" | "pause" | "disconnect";
  jobId: string;
  message: string;
  /** For a stream's ask: the job the agent holds ("" when none). */
  heldJobId?: string;
}

/** The longest name, hostname and other descriptive strings an agent may register with. */
const MAX_TEXT = 255;
const MAX_OS = 4096;

/** An agent's life: registration, connection, liveness, pings (with job offers), stop and disconnection. */
export function createAgentLifecycle(deps: AgentLifecycleDeps) {
  const { directory, liveness, handoff, events, logger, now } = deps;

  /** A live agent by id; anything else is Unauthenticated (its credential no longer works). */
  const requireLive = async (agentId: string): Promise<AgentDoc> => {
    const agent = agentId === "" ? null : await directory.get(agentId);
    if (!agent || !(LIVE_STATES.includes(agent.connectionState) || agent.connectionState === "lost"))
      throw unauthenticated();
    return agent;
  };

  /** Brings a lost agent back once it is heard from again. */
  const revive = async (agent: AgentDoc): Promise<AgentDoc> => {
    if (agent.connectionState !== "lost") return agent;
    const revived = await directory.update(
      agent,
      { connectionState: "connected", connectedAt: now(), lastSeenAt: now() },
      { connectionStates: ["lost"] },
    );
    if (revived) logger.info({ agentId: agent._id, name: agent.name }, "lost agent is back");
    return revived ?? (await requireLive(agent._id));
  };

  /** Ends an agent's connection: disconnected, or stopped when an operator asked it to stop. */
  const disconnect = async (agent: AgentDoc): Promise<AgentDoc> => {
    await handoff.abandon(agent, "agent_stop");
    const latest = (await directory.fresh(agent._id)) ?? agent;
    const stopped = latest.stopRequested;
    const updated = await directory.update(
      latest,
      stopped
        ? { connectionState: "stopped", stoppedAt: now(), disconnectedAt: now(), currentJobId: null }
        : { connectionState: "disconnected", disconnectedAt: now(), currentJobId: null },
      { connectionStates: [...LIVE_STATES, "lost"] },
    );
    await events.publish(SUBJECTS.agents.credentialRevoked, CredentialRevokedSchema, { agentId: agent._id });
    return updated ?? latest;
  };

  return {
    requireLive,

    /** Registers an agent: the server picks a name when it sent none. */
    async register(req: RegisterAgentRequest): Promise<{ agent: AgentDoc; accessToken: string }> {
      const token = req.tokenId === "" ? null : await deps.clusters.findAgentToken(req.tokenId);
      if (!token || token.revokedAt) throw unauthenticated();
      const problems = [];
      // The agent reports its operating system as the whole of /etc/os-release, newlines included.
      if (req.os.length > MAX_OS) problems.push({ field: "os", code: `is too long (maximum is ${MAX_OS} characters)` });
      for (const [field, value] of Object.entries({
        name: req.name,
        hostname: req.hostname,
        arch: req.arch,
        version: req.version,
        build: req.build,
        machine_id: req.machineId,
      })) {
        if (value.length > MAX_TEXT) problems.push({ field, code: `is too long (maximum is ${MAX_TEXT} characters)` });
        if (/\p{Cc}/u.test(value)) problems.push({ field, code: "must not contain control characters" });
      }
      const tagProblem = tagsProblem(req.metaData);
      if (tagProblem) problems.push({ field: "meta_data", code: tagProblem });
      if (problems.length > 0) throw invalidFields(problems);
      if (token.clusterId) {
        const keys = await deps.queueKeys(token.organizationId, token.clusterId);
        const queueProblem = registrationQueueProblem(parseTags(req.metaData).get("queue") ?? "", keys);
        if (queueProblem) throw invalidFields([{ field: "meta_data", code: queueProblem }]);
      }
      const hostname = req.hostname.trim();
      const at = now();
      const accessToken = newSecret(ACCESS_TOKEN_PREFIX);
      const agent: AgentDoc = {
        _id: newId(),
        organizationId: token.organizationId,
        clusterId: token.clusterId,
        tokenId: token._id,
        accessTokenHash: hashSecret(accessToken),
        name: req.name.trim() || `${hostname || "agent"}-${randomBytes(3).toString("hex")}`,
        hostname,
        os: req.os.trim(),
        arch: req.arch.trim(),
        version: req.version.trim(),
        build: req.build.trim(),
        userAgent: printable(req.userAgent).slice(0, MAX_TEXT),
        ipAddress: req.ipAddress.slice(0, 64),
        metaData: req.metaData.map((t) => t.trim()).filter((t) => t !== ""),
        queue: queueOf(req.metaData),
        priority: req.priority ?? null,
        connectionState: "never_connected",
        currentJobId: null,
        paused: false,
        pausedNote: null,
        pausedAt: null,
        pausedBy: null,
        pausedTimeoutInMinutes: null,
        stopRequested: false,
        pid: req.pid,
        machineId: req.machineId,
        ignoreInDispatches: req.ignoreInDispatches,
        createdAt: at,
        connectedAt: null,
        disconnectedAt: null,
        lostAt: null,
        stoppedAt: null,
        lastSeenAt: at,
        lastJobFinishedAt: null,
      };
      await directory.insert(agent);
      logger.info({ agentId: agent._id, name: agent.name, queue: agent.queue }, "agent registered");
      return { agent, accessToken };
    },

    /** The agent starts its work: connected. */
    async connect(agentId: string, seen: { userAgent: string; ipAddress: string }): Promise<AgentDoc> {
      const agent = await requireLive(agentId);
      liveness.touch(agentId);
      const updated = await directory.update(
        agent,
        {
          connectionState: agent.stopRequested ? "stopping" : "connected",
          connectedAt: now(),
          lastSeenAt: now(),
          ...(seen.userAgent ? { userAgent: printable(seen.userAgent).slice(0, MAX_TEXT) } : {}),
          ...(seen.ipAddress ? { ipAddress: seen.ipAddress.slice(0, 64) } : {}),
        },
        { connectionStates: [...LIVE_STATES, "lost"] },
      );
      return updated ?? (await requireLive(agentId));
    },

    /** The agent leaves: its job, if it still held one, ends; its access token stops working. */
    async disconnect(agentId: string): Promise<AgentDoc> {
      return disconnect(await requireLive(agentId));
    },

    /** The agent is alive. */
    async heartbeat(agentId: string): Promise<Date> {
      const agent = await requireLive(agentId);
      liveness.touch(agentId);
      await revive(agent);
      return now();
    },

    /** The agent asks what to do: disconnect (asked to stop), pause, take a job, or nothing. */
    async ping(agentId: string, opts: { forStream?: boolean } = {}): Promise<PingAnswer> {
      let agent = await requireLive(agentId);
      liveness.touch(agentId);
      agent = await revive(agent);
      // A gateway asking for the agent's stream (not the agent's own poll): a job the agent holds is its, running or
      // not, and the answer only names it with the agent's pause (a stop waits for the job's end, as the stream does).
      if (opts.forStream && agent.currentJobId) {
        return agent.paused
          ? { action: "pause", jobId: "", message: pausedMessage(agent), heldJobId: agent.currentJobId }
          : { action: "idle", jobId: "", message: "", heldJobId: agent.currentJobId };
      }
      if (agent.stopRequested) {
        if (agent.connectionState !== "stopping") {
          agent = (await directory.update(agent, { connectionState: "stopping" })) ?? agent;
        }
        if (agent.currentJobId) await handoff.abandon(agent, "agent_stop");
        return { action: "disconnect", jobId: "", message: "This agent was asked to stop." };
      }
      // A pause past its timeout ends here: the agent only learns of it from a ping.
      if (agent.paused) agent = await deps.pausing.expire(agent);
      if (agent.paused) return { action: "pause", jobId: "", message: pausedMessage(agent) };
      const jobId = await handoff.offer(agent);
      return { action: "idle", jobId: jobId ?? "", message: "" };
    },

    /**
     * An operator stops an agent: its next ping says disconnect. Without force it finishes its job first; with
     * force its job is canceled first.
     */
    async stop(organizationId: string, agentId: string, force: boolean): Promise<AgentDoc> {
      const agent = agentId === "" ? null : await directory.fresh(agentId);
      if (!agent || agent.organizationId !== organizationId) throw notFound("agent");
      if (!LIVE_STATES.includes(agent.connectionState))
        throw failedPrecondition(`Agent can't be stopped because it's ${agent.connectionState}`);
      const updated =
        (await directory.update(agent, { stopRequested: true }, { connectionStates: LIVE_STATES })) ?? agent;
      if (force && updated.currentJobId) {
        await deps.builds
          .transitionJob({ jobId: updated.currentJobId, event: JobEventType.CANCEL })
          .catch((err: unknown) => logger.warn({ err, jobId: updated.currentJobId }, "forced stop: job not canceled"));
      }
      logger.info({ agentId, force }, "agent asked to stop");
      return updated;
    },

    /**
     * Marks an agent lost and ends the job it held; true when this call did either. A lost agent still holding a
     * job (ending it failed before) has its job ended again.
     */
    async markLost(agent: AgentDoc): Promise<boolean> {
      // An agent already lost that still holds a job is one whose job could not be ended before (the builds
      // service down, say): it is tried again, but only once the loss is a window old, so that this replica does
      // not end the job a second time while another replica that marked it lost a moment ago is still ending it.
      const retryBefore = now().getTime() - deps.config.lostAfterMs;
      if (agent.connectionState === "lost" && (agent.lostAt?.getTime() ?? 0) > retryBefore) return false;
      const lost =
        agent.connectionState === "lost"
          ? agent
          : await directory.update(
              agent,
              { connectionState: "lost", lostAt: now() },
              { connectionStates: ["connected", "stopping", "never_connected"] },
            );
      if (!lost) return false;
      await handoff.abandon(lost, "agent_lost");
      return true;
    },

    /** Pings, connects and heartbeats answer with these intervals (all positive, in seconds). */
    intervals: () => ({
      pingInterval: deps.config.pingIntervalS,
      heartbeatInterval: deps.config.heartbeatIntervalS,
      jobStatusInterval: deps.config.jobStatusIntervalS,
    }),
  };
}

export type AgentLifecycle = ReturnType<typeof createAgentLifecycle>;
