// The agents service's event subscriptions over a fake NATS connection whose subscriptions the tests feed or break:
// a break means events may have been missed, and what they keep current must not be trusted any longer.
import { Code } from "@connectrpc/connect";
import { AgentChangedSchema } from "@conveyor/proto/agents";
import { encodeEvent, type NatsHandle, newId, SUBJECTS } from "@conveyor/runtime";
import { TRUNCATED_REFRESH_SKIPS } from "../dispatch/hints-refresh.js";
import { failure, logger, setup } from "../test-support.js";
import { followEvents } from "./followed-events.js";

/** One opened subscription: messages the test pushes, or a failure it injects, reach the reader in order. */
function channel() {
  const queue: Array<{ data: Uint8Array } | Error> = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const put = (item: { data: Uint8Array } | Error) => {
    queue.push(item);
    wake?.();
  };
  async function* items() {
    while (!closed) {
      const next = queue.shift();
      if (next instanceof Error) throw next;
      if (next) yield next;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  const sub = Object.assign(items(), {
    unsubscribe() {
      closed = true;
      wake?.();
    },
  });
  return { sub, put };
}

/** A NATS connection whose subscriptions are channels, the latest one per subject at hand. */
function fakeNats() {
  const latest = new Map<string, ReturnType<typeof channel>>();
  const opened = new Map<string, number>();
  const nc = {
    subscribe(subject: string) {
      const c = channel();
      latest.set(subject, c);
      opened.set(subject, (opened.get(subject) ?? 0) + 1);
      return c.sub;
    },
  };
  const current = (subject: string) => {
    const c = latest.get(subject);
    if (!c) throw new Error(`nothing subscribed to ${subject}`);
    return c;
  };
  return {
    nats: { nc } as unknown as Pick<NatsHandle, "nc">,
    opened: (subject: string) => opened.get(subject) ?? 0,
    deliver: (subject: string, data: Uint8Array) => current(subject).put({ data }),
    break: (subject: string) => current(subject).put(new Error("connection to NATS lost")),
  };
}

const until = async (done: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
};

const agentChanged = (agentId: string) =>
  encodeEvent(SUBJECTS.agents.agentChanged, AgentChangedSchema, { agent: { id: agentId } }).data;

describe("the agents service's event subscriptions", () => {
  it("drops a cached agent on its agent_changed event, and every cached agent when the subscription breaks", async () => {
    const s = await setup();
    const fake = fakeNats();
    const stop = followEvents(fake.nats, s.domain, logger);
    try {
      const [a, b] = [await s.agent(), await s.agent()];
      // Another process disconnects both; this one caches them as connected, so their pings still pass.
      for (const id of [a.id, b.id]) await s.agentsRepo.updateAgent(id, { connectionState: "disconnected" });
      expect((await failure(s.client.pingAgent({ agentId: a.id }))).code).toBeUndefined();
      expect((await failure(s.client.pingAgent({ agentId: b.id }))).code).toBeUndefined();

      // The other process's announcement of a's change arrives: a's copy is dropped, b's is not.
      fake.deliver(SUBJECTS.agents.agentChanged, agentChanged(a.id));
      await until(async () => (await failure(s.client.pingAgent({ agentId: a.id }))).code !== undefined, "a's event");
      expect((await failure(s.client.pingAgent({ agentId: a.id }))).code).toBe(Code.Unauthenticated);
      expect((await failure(s.client.pingAgent({ agentId: b.id }))).code).toBeUndefined();

      // The subscription breaks (b's announcement may have been lost with it): every cached agent is dropped, and
      // the subscription is made again.
      fake.break(SUBJECTS.agents.agentChanged);
      await until(() => fake.opened(SUBJECTS.agents.agentChanged) === 2, "the subscription made again");
      expect((await failure(s.client.pingAgent({ agentId: b.id }))).code).toBe(Code.Unauthenticated);
    } finally {
      await stop();
    }
  });

  it("reads the whole waiting list on the next refresh once the job events subscription broke", async () => {
    const s = await setup();
    const fake = fakeNats();
    const stop = followEvents(fake.nats, s.domain, logger);
    try {
      // A list cut at its limit (a thousand jobs wait, of another organization): the refreshes after it are
      // skipped, since events keep the hints current.
      await s.seed(
        Array.from({ length: 1001 }, () => ({})),
        { orgId: newId(), clusterId: "" },
        false,
      );
      await s.domain.refreshHints();
      await s.domain.refreshHints();
      expect(s.builds.callsOf("listDispatchableJobs")).toHaveLength(1);
      // So the next one would be skipped too.
      expect(TRUNCATED_REFRESH_SKIPS).toBeGreaterThan(1);

      // Without the events, nothing keeps them current: the next refresh reads again.
      fake.break(SUBJECTS.builds.jobStateChanged);
      await until(() => fake.opened(SUBJECTS.builds.jobStateChanged) === 2, "the subscription made again");
      await s.domain.refreshHints();
      expect(s.builds.callsOf("listDispatchableJobs")).toHaveLength(2);
    } finally {
      await stop();
    }
  });
});
