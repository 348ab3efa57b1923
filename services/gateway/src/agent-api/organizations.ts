import type { Organization } from "@conveyor/proto/identity";
import { LRUCache } from "lru-cache";
import type { GatewayClients } from "../clients/gateway-clients.js";

/** How long an organization (for its slug) is reused: slugs change rarely, and only metrics and `token` need them. */
const TTL_MS = 60_000;

/** Organizations by id, as the agent API needs them (metrics and `GET token` name the slug), cached briefly. */
export function createOrganizationLookup(clients: Pick<GatewayClients, "identity">) {
  // A lookup runs in the context of the request that asked first: its RPC carries that request's id.
  const cache = new LRUCache<string, Organization>({
    max: 10_000,
    ttl: TTL_MS,
    fetchMethod: async (id) => (await clients.identity.getOrganization({ id })).organization,
  });
  return {
    get: (id: string) => cache.fetch(id),
  };
}

export type OrganizationLookup = ReturnType<typeof createOrganizationLookup>;
