import { create, toBinary } from "@bufbuild/protobuf";
import { MembershipChangedSchema, Role, TokenRevokedSchema } from "@conveyor/proto/identity";
import { type Logger, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "../testing/fake-nats.js";
import { makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { subscribeIdentityEvents } from "./identity-events.js";
import { createPrincipalCache } from "./principal-cache.js";

const acme = makeOrg("acme");
const ann = makePrincipal(makeUser(1, "Ann"), [], [[acme, Role.MEMBER]]);
const bob = makePrincipal(makeUser(2, "Bob"), [], [[acme, Role.MEMBER]]);
const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;

/** A principal cache of Ann's and Bob's tokens, both looked up once, over a fake NATS; lookups are counted. */
async function world() {
  const nats = createFakeNats();
  const lookups: string[] = [];
  const cache = createPrincipalCache(
    async (secret) => {
      lookups.push(secret);
      return ({ ann, bob } as Record<string, typeof ann>)[secret] ?? null;
    },
    { ttlMs: 60_000 },
  );
  await cache.get("ann");
  await cache.get("bob");
  lookups.length = 0;
  const stop = subscribeIdentityEvents(nats.nc, cache, logger);
  stops.push(stop);
  /** The tokens looked up again (not answered from the cache) when both are asked for now. */
  const lookedUpAgain = async () => {
    lookups.length = 0;
    await cache.get("ann");
    await cache.get("bob");
    return [...lookups];
  };
  return { nats, cache, lookedUpAgain };
}

const revoke = (tokenId: string) => toBinary(TokenRevokedSchema, create(TokenRevokedSchema, { tokenId }));
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  jest.clearAllMocks();
});

describe("identity events", () => {
  it("drops a revoked token's principal, and a user's principals when their memberships change", async () => {
    const { nats, lookedUpAgain } = await world();
    nats.publish(SUBJECTS.identity.tokenRevoked, revoke(ann.token?.id ?? ""));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await lookedUpAgain()).toEqual(["ann"]);
    const change = create(MembershipChangedSchema, { membership: { userId: bob.user?.id ?? "" } });
    nats.publish(SUBJECTS.identity.membershipChanged, toBinary(MembershipChangedSchema, change));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await lookedUpAgain()).toEqual(["bob"]);
  });

  it.each([
    ["fails (its iterator throws)", "fail"],
    ["ends", "end"],
  ] as const)("drops every principal when a subscription %s, and goes on with it opened again", async (_what, how) => {
    const { nats, lookedUpAgain } = await world();
    const subject = SUBJECTS.identity.tokenRevoked;
    expect(nats.opened(subject)).toBe(1);
    nats[how](subject);
    await waitFor(() => nats.opened(subject) === 2);
    expect(logger.error).toHaveBeenCalledWith(
      expect.objectContaining({ loop: `subscription.${subject}` }),
      expect.any(String),
    );
    // Everything was dropped: both tokens are asked of identity again (and cached again).
    expect(await lookedUpAgain()).toEqual(["ann", "bob"]);
    expect(await lookedUpAgain()).toEqual([]);
    // The reopened subscription is heard.
    nats.publish(subject, revoke(bob.token?.id ?? ""));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await lookedUpAgain()).toEqual(["bob"]);
  });

  it("logs an undecodable event and goes on with the next", async () => {
    const { nats, lookedUpAgain } = await world();
    nats.publish(SUBJECTS.identity.tokenRevoked, new Uint8Array([0xff, 0xff, 0xff]));
    nats.publish(SUBJECTS.identity.tokenRevoked, revoke(ann.token?.id ?? ""));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(await lookedUpAgain()).toEqual(["ann"]);
  });
});
