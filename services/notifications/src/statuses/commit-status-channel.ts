import { authorizationHeader, forgeStatusRequest, isSourceProviderKind } from "@conveyor/ci-rules";
import type { Channel } from "../dispatch/channel.js";
import { type AttemptOutcome, retryableStatus } from "../domain/retry-policy.js";
import { GithubAppError, type GithubAppTokens, type OutboundCall } from "../providers/github-app.js";
import type { SourceProviderRepository } from "../providers/source-provider-repository.js";
import type { OpenedCredential, SourceProviders } from "../providers/source-providers.js";
import { COMMIT_STATUS_KIND, readCommitStatusRequest } from "./commit-status-request.js";
import { orderText, type StatusMarkRepository, statusMarkId } from "./status-mark-repository.js";

/** How much of a forge's refusal is kept in the delivery's error. */
const MAX_ERROR_BODY = 200;

export interface CommitStatusChannelDeps {
  connections: Pick<SourceProviderRepository, "get">;
  providers: Pick<SourceProviders, "credential">;
  marks: StatusMarkRepository;
  /** HTTP through the outbound client (the SSRF-safe one: docs/security.md#outbound-requests). */
  call: OutboundCall;
  /** Installation tokens of GitHub App connections. */
  appTokens: GithubAppTokens;
  now: () => Date;
  /** Whether a thrown error of `post` is worth trying again (an address refused by policy is not). */
  retryableError?: (err: unknown) => boolean;
}

const failed = (error: string, retryable: boolean, responseCode = 0): AttemptOutcome => ({
  ok: false,
  responseCode,
  error,
  retryable,
});

/**
 * Sends commit statuses to the forges (docs/statuses.md#delivery): the connection and its token are read at each
 * attempt (a removed connection fails the delivery; a new token is used at once), a status at or below its
 * commit and context's mark is not sent (it is stale: a later one was sent), and a sent one raises the mark.
 */
export function createCommitStatusChannel(deps: CommitStatusChannelDeps): Channel {
  return {
    kind: COMMIT_STATUS_KIND,
    async send(delivery, signal) {
      const request = readCommitStatusRequest(delivery.request);
      if (!request) return failed("the delivery is not a commit status", false);
      const connection = await deps.connections.get(request.organizationId, request.connectionId);
      if (!connection) return failed("the source provider was removed", false);
      if (!isSourceProviderKind(connection.kind))
        return failed(`unknown source provider kind ${connection.kind}`, false);
      const markId = statusMarkId(
        request.repository.host,
        request.repository.path,
        request.sha,
        request.status.context,
      );
      const order = orderText(request.status.order);
      const sent = await deps.marks.orderOf(markId);
      if (sent !== null && sent >= order) {
        // A later status of this commit and context was sent: this one is stale, and sending it would go back.
        return { ok: true, responseCode: 0, error: "", retryable: false };
      }
      let credential: OpenedCredential;
      try {
        credential = deps.providers.credential(connection);
      } catch (err) {
        return failed(`the source provider's credential cannot be opened: ${(err as Error).message}`, false);
      }
      let token: string;
      if (credential.type === "token") token = credential.token;
      else {
        try {
          token = await deps.appTokens.token(
            { id: connection._id, apiUrl: connection.apiUrl },
            credential.app,
            request.repository,
            signal,
          );
        } catch (err) {
          if (err instanceof GithubAppError) return failed(err.message, err.retryable, err.responseCode);
          return failed(err instanceof Error ? err.message : String(err), deps.retryableError?.(err) ?? true);
        }
      }
      const forge = forgeStatusRequest(
        connection.kind,
        connection.apiUrl,
        request.repository,
        request.sha,
        request.status,
      );
      let response: { status: number; body: string };
      try {
        response = await deps.call({
          method: "POST",
          url: forge.url,
          headers: { ...forge.headers, ...authorizationHeader(connection.kind, token), "User-Agent": "Conveyor" },
          body: JSON.stringify(forge.body),
          signal,
        });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        return failed(message, deps.retryableError ? deps.retryableError(err) : true);
      }
      if (response.status >= 200 && response.status < 300) {
        await deps.marks.raise(markId, order, request.status.state, deps.now());
        return { ok: true, responseCode: response.status, error: "", retryable: false };
      }
      // An installation token refused: made again at the next attempt (the App's permissions may have changed).
      if (credential.type === "github_app" && response.status === 401) deps.appTokens.forget(connection._id);
      const said = response.body.replace(/\s+/g, " ").trim().slice(0, MAX_ERROR_BODY);
      return failed(
        `${connection.kind} answered ${response.status}${said === "" ? "" : `: ${said}`}`,
        retryableStatus(response.status) || (credential.type === "github_app" && response.status === 401),
        response.status,
      );
    },
  };
}
