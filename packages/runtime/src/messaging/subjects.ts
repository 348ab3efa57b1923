/** NATS subjects of domain events, `ci.<domain>.<event>`; payloads are the messages in each domain's events.proto. */
export const SUBJECTS = {
  identity: {
    tokenRevoked: "ci.identity.token_revoked",
    sessionEnded: "ci.identity.session_ended",
    membershipChanged: "ci.identity.membership_changed",
    organizationCreated: "ci.identity.organization_created",
    userCreated: "ci.identity.user_created",
  },
  pipelines: {
    created: "ci.pipelines.pipeline_created",
    updated: "ci.pipelines.pipeline_updated",
    archived: "ci.pipelines.pipeline_archived",
    unarchived: "ci.pipelines.pipeline_unarchived",
    deleted: "ci.pipelines.pipeline_deleted",
  },
  builds: {
    buildCreated: "ci.builds.build_created",
    buildStateChanged: "ci.builds.build_state_changed",
    buildFinished: "ci.builds.build_finished",
    jobStateChanged: "ci.builds.job_state_changed",
    pipelineCountsChanged: "ci.builds.pipeline_counts_changed",
  },
  agents: {
    agentConnected: "ci.agents.agent_connected",
    agentDisconnected: "ci.agents.agent_disconnected",
    agentLost: "ci.agents.agent_lost",
    agentStopping: "ci.agents.agent_stopping",
    agentChanged: "ci.agents.agent_changed",
    jobDispatched: "ci.agents.job_dispatched",
    credentialRevoked: "ci.agents.credential_revoked",
  },
} as const;

/**
 * The core NATS subject (outside the events stream's `ci.>`, so JetStream keeps nothing) on which the builds service
 * announces each stored chunk of a job's log (JobLogChunkStored), for the gateways' live pages
 * (docs/pages.md#live-updates). A gateway subscribes to a job's subject only while a page of it watches that log.
 */
export function jobLogSubject(jobId: string): string {
  return `live.builds.job_log.${jobId}`;
}
