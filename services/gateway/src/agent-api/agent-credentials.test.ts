import { create, toBinary } from "@bufbuild/protobuf";
import {
  AuthenticateAgentCredentialResponseSchema,
  CredentialKind,
  CredentialRevokedSchema,
} from "@conveyor/proto/agents";
import { type Logger, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { createAgentCredentialCache, subscribeCredentialEvents } from "./agent-credentials.js";

const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** A credential cache over two agents' tokens (both looked up once), kept current by events on a fake NATS. */
async function world() {
  const asked: string[] = [];
  const clients = {
    agents: {
      async authenticateAgentCredential({ secret }: { secret: string }) {
        asked.push(secret);
        return create(AuthenticateAgentCredentialResponseSchema, {
          kind: CredentialKind.AGENT,
          agentId: `a-${secret}`,
        });
      },
    },
  } as unknown as Pick<GatewayClients, "agents">;
  const cache = createAgentCredentialCache(clients, { ttlMs: 60_000 });
  await cache.get("one");
  await cache.get("two");
  const nats = createFakeNats();
  const stop = subscribeCredentialEvents(nats.nc, cache, logger);
  /** The secrets asked of the agents service again (not answered from the cache) when both are used now. */
  const askedAgain = async () => {
    asked.length = 0;
    await cache.get("one");
    await cache.get("two");
    return [...asked];
  };
  return { nats, stop, askedAgain };
}

describe("agent credential events", () => {
  it("drops the credentials of a revoked agent, and only those", async () => {
    const { nats, stop, askedAgain } = await world();
    const revoked = create(CredentialRevokedSchema, { agentId: "a-one" });
    nats.publish(SUBJECTS.agents.credentialRevoked, toBinary(CredentialRevokedSchema, revoked));
    await settle();
    expect(await askedAgain()).toEqual(["one"]);
    await stop();
  });

  it("drops every credential when its subscription breaks, and goes on with it opened again", async () => {
    const { nats, stop, askedAgain } = await world();
    nats.fail(SUBJECTS.agents.credentialRevoked);
    await waitFor(() => nats.opened(SUBJECTS.agents.credentialRevoked) === 2);
    expect(await askedAgain()).toEqual(["one", "two"]);
    const revoked = create(CredentialRevokedSchema, { agentId: "a-two" });
    nats.publish(SUBJECTS.agents.credentialRevoked, toBinary(CredentialRevokedSchema, revoked));
    await settle();
    expect(await askedAgain()).toEqual(["two"]);
    await stop();
  });
});
