// The lost-agent sweep with several replicas: every replica sweeps, and one that finds an agent another replica
// marked lost a moment ago (its job not ended yet) leaves that job to it.
import { Code, ConnectError } from "@connectrpc/connect";
import { CONFIG, held, setup, start } from "../test-support.js";

describe("the lost-agent sweep beside other replicas", () => {
  it("leaves the job of an agent lost a moment ago to the replica ending it, and ends it itself a window later", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    s.clock.advance(CONFIG.lostAfterMs + 1);
    // The replica that marks the agent lost cannot end its job yet (as if it were still on its way).
    s.builds.failNext("getJob", new ConnectError("builds is slow", Code.Unavailable));
    await expect(s.domain.sweepLost()).rejects.toThrow(/builds is slow/);
    expect((await s.getAgent(a.id))?.connectionState).toBe("lost");

    // Another sweep within the window (any replica's) finds the agent lost and still holding the job: it leaves
    // it, so the job is never ended twice.
    s.clock.advance(CONFIG.lostAfterMs - 1);
    expect(await s.domain.sweepLost()).toBe(0);
    expect((await held(s, jobId)).state).toBe("running");

    // A window after the loss, the job is ended by whichever replica sweeps.
    s.clock.advance(2);
    expect(await s.domain.sweepLost()).toBe(1);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_lost" });
    expect(await s.domain.sweepLost()).toBe(0);
  });
});
