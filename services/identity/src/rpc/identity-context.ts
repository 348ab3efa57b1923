import type { EventPublisher } from "@conveyor/runtime";
import type { IdentityRepository } from "../store/identity-repository.js";

/** What the identity service's RPC groups (users, organizations, access tokens) work with. */
export interface IdentityContext {
  repo: IdentityRepository;
  events: EventPublisher;
  now: () => Date;
}
