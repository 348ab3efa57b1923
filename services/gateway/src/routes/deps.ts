import type { CallOptions } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import type { PrincipalCache } from "../auth/principal-cache.js";
import type { GatewayClients } from "../clients.js";
import type { Urls } from "../render/urls.js";

/** What every route module receives. */
export interface RouteDeps {
  clients: GatewayClients;
  urls: Urls;
  publicUrl: string;
  principals: PrincipalCache;
}

/** Per-call options that carry the request id to the service. */
export function rpcOptions(request: FastifyRequest): CallOptions {
  return { headers: { "x-request-id": request.id } };
}
