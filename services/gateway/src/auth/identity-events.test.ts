import { create, toBinary } from "@bufbuild/protobuf";
import { MembershipChangedSchema, Role, SessionEndedSchema, TokenRevokedSchema } from "@conveyor/proto/identity";
import { type Logger, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import { makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { subscribeIdentityEvents } from "./identity-events.js";
import { createPrincipalCache } from "./principal-cache.js";

const acme = makeOrg("acme");
const ann = makePrincipal(makeUser(1, "Ann"), [], [[acme, Role.MEMBER]]);
const bob = makePrincipal(makeUser(2, "Bob"), [], [[acme, Role.MEMBER]]);
/** A session's principal: the user's, with token id session:<id>. */
const session = (principal: typeof ann, id: string) => {
  const copy = structuredClone(principal);
  if (copy.token) copy.token.id = `session:${id}`;
  return copy;
};
const sessionPrincipals: Record<string, typeof ann> = {
  "ann-1": session(ann, "s1"),
  "ann-2": session(ann, "s2"),
  "bob-1": session(bob, "s3"),
};
const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;

/**
 * A token cache of Ann's and Bob's tokens and a session cache of their sessions, every entry looked up once, over a
 * fake NATS; lookups are counted.
 */
async function world() {
  const nats = createFakeNats();
  const lookups: string[] = [];
  const cacheOf = (principals: Record<string, typeof ann>) =>
    createPrincipalCache(
      async (secret) => {
        lookups.push(secret);
        return principals[secret] ?? null;
      },
      { ttlMs: 60_000 },
    );
  const tokens = cacheOf({ ann, bob });
  const sessions = cacheOf(sessionPrincipals);
  const secrets = { tokens: ["ann", "bob"], sessions: Object.keys(sessionPrincipals) };
  /** The secrets looked up again (not answered from the caches) when all are asked for now. */
  const lookedUpAgain = async () => {
    lookups.length = 0;
    for (const secret of secrets.tokens) await tokens.get(secret);
    for (const secret of secrets.sessions) await sessions.get(secret);
    return [...lookups];
  };
  await lookedUpAgain();
  const stop = subscribeIdentityEvents(nats.nc, { tokens, sessions }, logger);
  stops.push(stop);
  return { nats, lookedUpAgain };
}

const revoke = (tokenId: string) => toBinary(TokenRevokedSchema, create(TokenRevokedSchema, { tokenId }));
const ended = (userId: string, sessionId = "") =>
  toBinary(SessionEndedSchema, create(SessionEndedSchema, { userId, sessionId }));
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  jest.clearAllMocks();
});

describe("identity events", () => {
  it("drops a revoked token's principal, and a user's tokens and sessions when their memberships change", async () => {
    const { nats, lookedUpAgain } = await world();
    nats.publish(SUBJECTS.identity.tokenRevoked, revoke(ann.token?.id ?? ""));
    await settle();
    expect(await lookedUpAgain()).toEqual(["ann"]);
    const change = create(MembershipChangedSchema, { membership: { userId: bob.user?.id ?? "" } });
    nats.publish(SUBJECTS.identity.membershipChanged, toBinary(MembershipChangedSchema, change));
    await settle();
    expect(await lookedUpAgain()).toEqual(["bob", "bob-1"]);
  });

  it("drops an ended session, or every session of a user when none is named, and no token", async () => {
    const { nats, lookedUpAgain } = await world();
    nats.publish(SUBJECTS.identity.sessionEnded, ended(ann.user?.id ?? "", "s2"));
    await settle();
    expect(await lookedUpAgain()).toEqual(["ann-2"]);
    nats.publish(SUBJECTS.identity.sessionEnded, ended(ann.user?.id ?? ""));
    await settle();
    expect(await lookedUpAgain()).toEqual(["ann-1", "ann-2"]);
  });

  it.each([
    ["fails (its iterator throws)", "fail"],
    ["ends", "end"],
  ] as const)("drops every principal when a subscription %s, and goes on with it opened again", async (_what, how) => {
    const { nats, lookedUpAgain } = await world();
    for (const subject of [SUBJECTS.identity.tokenRevoked, SUBJECTS.identity.sessionEnded]) {
      expect(nats.opened(subject)).toBe(1);
      nats[how](subject);
      await waitFor(() => nats.opened(subject) === 2);
      expect(logger.error).toHaveBeenCalledWith(
        expect.objectContaining({ loop: `subscription.${subject}` }),
        expect.any(String),
      );
      // Everything was dropped: every secret is asked of identity again (and cached again).
      expect(await lookedUpAgain()).toEqual(["ann", "bob", "ann-1", "ann-2", "bob-1"]);
      expect(await lookedUpAgain()).toEqual([]);
    }
    // The reopened subscriptions are heard.
    nats.publish(SUBJECTS.identity.tokenRevoked, revoke(bob.token?.id ?? ""));
    nats.publish(SUBJECTS.identity.sessionEnded, ended(bob.user?.id ?? "", "s3"));
    await settle();
    expect(await lookedUpAgain()).toEqual(["bob", "bob-1"]);
  });

  it("logs an undecodable event and goes on with the next", async () => {
    const { nats, lookedUpAgain } = await world();
    nats.publish(SUBJECTS.identity.tokenRevoked, new Uint8Array([0xff, 0xff, 0xff]));
    nats.publish(SUBJECTS.identity.tokenRevoked, revoke(ann.token?.id ?? ""));
    await settle();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(await lookedUpAgain()).toEqual(["ann"]);
  });
});
