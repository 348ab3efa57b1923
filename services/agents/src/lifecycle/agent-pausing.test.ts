// Pausing and resuming agents, through the whole agents service in memory (test-support.ts): from REST (with the
// user) or by the agent from inside its job, the pause timeout ended by pings, and other processes told at once.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import { SUBJECTS } from "@conveyor/runtime";
import { failure, held, iso, setup, start, T0 } from "../test-support.js";

const admin = {
  id: "11111111-0000-4000-8000-000000000001",
  name: "Admin",
  email: "admin@example.com",
  avatarUrl: "",
  createdAt: timestampFromDate(new Date("2026-01-01T00:00:00.000Z")),
};
const MINUTE = 60_000;

describe("pausing agents", () => {
  it("pauses an agent with a note, a timeout and who paused it: its pings say pause and take no job", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    const { agent } = await s.client.pauseAgent({
      organizationId: s.orgId,
      id: a.id,
      note: "disk full",
      timeoutInMinutes: 30,
      pausedBy: admin,
    });
    expect(agent).toMatchObject({ paused: true, pausedNote: "disk full", pausedTimeoutInMinutes: 30 });
    expect(agent?.pausedBy).toMatchObject({ id: admin.id, name: "Admin", email: "admin@example.com" });
    expect(iso(agent?.pausedAt)).toBe(new Date(T0).toISOString());
    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({
      action: "pause",
      jobId: "",
      message: "Paused: disk full",
    });
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });
    const changed = s.events.on(SUBJECTS.agents.agentChanged).at(-1)?.agent as { id: string; paused: boolean };
    expect(changed).toMatchObject({ id: a.id, paused: true });
  });

  it("resumes a paused agent, which then takes the job waiting for it", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.client.pauseAgent({ organizationId: s.orgId, id: a.id, note: "" });
    const jobId = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("pause");
    const { agent } = await s.client.resumeAgent({ organizationId: s.orgId, id: a.id });
    expect(agent).toMatchObject({ paused: false, pausedNote: "" });
    expect(agent?.pausedAt).toBeUndefined();
    expect(agent?.pausedBy).toBeUndefined();
    expect(agent?.pausedTimeoutInMinutes).toBeUndefined();
    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({ action: "idle", jobId });
  });

  it("refuses to pause a paused agent, or to resume one that is not paused, with Buildkite's message", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.client.pauseAgent({ organizationId: s.orgId, id: a.id });
    expect(await failure(s.client.pauseAgent({ organizationId: s.orgId, id: a.id }))).toMatchObject({
      code: Code.FailedPrecondition,
      message: "Agent is already paused",
    });
    await s.client.resumeAgent({ organizationId: s.orgId, id: a.id });
    expect(await failure(s.client.resumeAgent({ organizationId: s.orgId, id: a.id }))).toMatchObject({
      code: Code.FailedPrecondition,
      message: "Agent is not paused",
    });
  });

  it("ends a pause after 5 minutes by default, at the agent's next ping", async () => {
    const s = await setup();
    const a = await s.agent();
    const { agent } = await s.client.pauseAgent({ organizationId: s.orgId, id: a.id });
    expect(agent?.pausedTimeoutInMinutes).toBe(5);
    const jobId = await s.job();
    s.clock.advance(5 * MINUTE - 1);
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("pause");
    s.clock.advance(1);
    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({ action: "idle", jobId });
    expect((await s.getAgent(a.id))?.paused).toBe(false);
    const last = s.events.on(SUBJECTS.agents.agentChanged).map((e) => (e.agent as { paused: boolean }).paused);
    expect(last).toContain(false);
  });

  it("lets a timed-out pause be paused again, and resume refuses it as not paused", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.client.pauseAgent({ organizationId: s.orgId, id: a.id, timeoutInMinutes: 1 });
    s.clock.advance(MINUTE);
    expect((await failure(s.client.resumeAgent({ organizationId: s.orgId, id: a.id }))).message).toBe(
      "Agent is not paused",
    );
    const again = await s.client.pauseAgent({ organizationId: s.orgId, id: a.id, note: "again", timeoutInMinutes: 2 });
    expect(again.agent).toMatchObject({ paused: true, pausedNote: "again", pausedTimeoutInMinutes: 2 });
    expect(iso(again.agent?.pausedAt)).toBe(new Date(T0 + MINUTE).toISOString());
  });

  it("refuses bad timeouts and notes with a sentence", async () => {
    const s = await setup();
    const a = await s.agent();
    for (const timeoutInMinutes of [0, 10_081]) {
      expect(await failure(s.client.pauseAgent({ organizationId: s.orgId, id: a.id, timeoutInMinutes }))).toMatchObject(
        {
          code: Code.InvalidArgument,
          message: "Timeout in minutes must be a whole number from 1 to 10080",
        },
      );
    }
    expect(
      (await failure(s.client.pauseAgent({ organizationId: s.orgId, id: a.id, note: "n".repeat(1001) }))).message,
    ).toBe("Note is too long (maximum is 1000 characters)");
    expect((await s.getAgent(a.id))?.paused).toBe(false);
  });

  it("knows no agent of another organization, and pauses only live agents", async () => {
    const s = await setup();
    const a = await s.agent();
    const other = await s.place();
    expect(await failure(s.client.pauseAgent({ organizationId: other.orgId, id: a.id }))).toMatchObject({
      code: Code.NotFound,
      message: "No agent found",
    });
    expect((await failure(s.client.resumeAgent({ organizationId: other.orgId, id: a.id }))).code).toBe(Code.NotFound);
    expect((await failure(s.client.pauseAgent({ organizationId: s.orgId, id: "nope" }))).code).toBe(Code.NotFound);

    const stopping = await s.agent();
    await s.client.stopAgent({ organizationId: s.orgId, id: stopping.id });
    expect((await failure(s.client.pauseAgent({ organizationId: s.orgId, id: stopping.id }))).message).toBe(
      "Agent can't be paused because it's stopping",
    );
    await s.client.disconnectAgent({ agentId: a.id });
    expect((await failure(s.client.pauseAgent({ organizationId: s.orgId, id: a.id }))).message).toBe(
      "Agent can't be paused because it's disconnected",
    );
  });

  it("lets the job an agent runs go on when it is paused, then offers it nothing", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    // As `buildkite-agent pause` from inside the job does: no user.
    const { agent } = await s.client.pauseAgent({ organizationId: s.orgId, id: a.id, note: "from the job" });
    expect(agent?.pausedBy).toBeUndefined();
    expect(agent?.currentJobId).toBe(jobId);
    expect((await s.builds.job(jobId)).state).toBe("running");
    await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 });
    expect((await s.builds.job(jobId)).state).toBe("passed");
    const next = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("pause");
    expect(await held(s, next)).toEqual({ state: "scheduled", agent: "" });
    expect(s.builds.transitions().filter((t) => t.event === JobEventType.CANCEL)).toEqual([]);
  });

  it("tells another process at once: its cached agent is dropped on agent_changed", async () => {
    const s = await setup();
    const a = await s.agent();
    const other = s.replica();
    expect((await other.client.pingAgent({ agentId: a.id })).action).toBe("idle");
    await s.client.pauseAgent({ organizationId: s.orgId, id: a.id });
    for (const e of s.events.on(SUBJECTS.agents.agentChanged))
      other.domain.agentChanged((e.agent as { id: string }).id);
    expect((await other.client.pingAgent({ agentId: a.id })).action).toBe("pause");
  });
});
