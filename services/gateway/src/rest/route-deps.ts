import type { AnswerCache } from "../answer-cache/answer-cache.js";
import type { PipelineAccessChecks } from "../auth/pipeline-access.js";
import type { PrincipalCache } from "../auth/principal-cache.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { Urls } from "../render/urls.js";

/** What every route module receives. */
export interface RouteDeps {
  clients: GatewayClients;
  urls: Urls;
  publicUrl: string;
  principals: PrincipalCache;
  /** Team-based pipeline access, as identity's access policy decides it. */
  pipelineAccess: PipelineAccessChecks;
  /** Rendered build answers, served again when the builds service confirms them. */
  answers: AnswerCache;
}
