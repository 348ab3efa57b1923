/** NATS subjects of domain events, `ci.<domain>.<event>`; payloads are the messages in each domain's events.proto. */
export const SUBJECTS = {
  identity: {
    tokenRevoked: "ci.identity.token_revoked",
    membershipChanged: "ci.identity.membership_changed",
    organizationCreated: "ci.identity.organization_created",
    userCreated: "ci.identity.user_created",
  },
} as const;
