import { COMMIT_STATUS_STATES, type CommitStatus, type RepositoryLocation } from "@conveyor/ci-rules";

/** The delivery kind of commit statuses (channels.ts, handlers.ts). */
export const COMMIT_STATUS_KIND = "commit-status";

/**
 * A commit-status delivery's request, as stored with the delivery (plain JSON): which connection, repository,
 * commit and status. Never the credential: the channel opens it from the connection when it sends.
 */
export interface CommitStatusRequest {
  connectionId: string;
  organizationId: string;
  repository: RepositoryLocation;
  sha: string;
  status: CommitStatus;
}

/** Reads a stored request back, or null when it is not one (a delivery stored by another version, or altered). */
export function readCommitStatusRequest(value: Record<string, unknown>): CommitStatusRequest | null {
  const str = (v: unknown) => typeof v === "string";
  const repository = value.repository as Record<string, unknown> | undefined;
  const status = value.status as Record<string, unknown> | undefined;
  if (!str(value.connectionId) || !str(value.organizationId) || !str(value.sha)) return null;
  if (
    !repository ||
    !str(repository.host) ||
    !str(repository.owner) ||
    !str(repository.name) ||
    !str(repository.path)
  ) {
    return null;
  }
  if (!status || !str(status.context) || !str(status.description) || !str(status.targetUrl)) return null;
  if (!(COMMIT_STATUS_STATES as readonly unknown[]).includes(status.state)) return null;
  const order = status.order;
  if (!Array.isArray(order) || !order.every((n) => typeof n === "number" && Number.isFinite(n))) return null;
  return {
    connectionId: value.connectionId as string,
    organizationId: value.organizationId as string,
    repository: {
      host: repository.host as string,
      port: typeof repository.port === "number" ? repository.port : null,
      owner: repository.owner as string,
      name: repository.name as string,
      path: repository.path as string,
    },
    sha: value.sha as string,
    status: {
      context: status.context as string,
      state: status.state as CommitStatus["state"],
      description: status.description as string,
      targetUrl: status.targetUrl as string,
      canceled: status.canceled === true,
      order: order as number[],
    },
  };
}
