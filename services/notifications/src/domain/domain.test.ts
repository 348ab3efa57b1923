import { createHmac } from "node:crypto";
import { signatureHeader } from "../webhooks/signature.js";
import { agentEventName, buildEventName, isWebhookEvent, jobEventName } from "./event-names.js";
import { backoffMs, nextStep, retryableStatus } from "./retry-policy.js";
import { webhookProblems } from "./webhook-rules.js";

describe("buildEventName", () => {
  it.each([
    ["build_created", "scheduled", "", "build.scheduled"],
    ["build_created", "skipped", "", "build.skipped"],
    ["build_state_changed", "running", "scheduled", "build.running"],
    ["build_state_changed", "running", "failing", null],
    ["build_state_changed", "failing", "running", "build.failing"],
    ["build_state_changed", "blocked", "running", "build.finished"],
    ["build_state_changed", "passed", "running", null],
    ["build_state_changed", "canceling", "running", null],
    ["build_state_changed", "running", "running", null],
    ["build_finished", "passed", "running", "build.finished"],
    ["build_finished", "failed", "failing", "build.finished"],
    ["build_finished", "canceled", "canceling", "build.finished"],
    ["build_finished", "skipped", "scheduled", "build.skipped"],
    ["pipeline_counts_changed", "running", "", null],
  ])("%s to %s from %s is %s", (kind, state, previous, name) => {
    expect(buildEventName(kind, state, previous)).toBe(name);
  });
});

describe("jobEventName", () => {
  it.each([
    ["script", "scheduled", "waiting", "job.scheduled"],
    ["script", "running", "accepted", "job.started"],
    ["script", "passed", "running", "job.finished"],
    ["script", "timed_out", "timing_out", "job.finished"],
    ["script", "expired", "scheduled", "job.finished"],
    ["script", "assigned", "scheduled", null],
    ["script", "running", "running", null],
    ["manual", "unblocked", "blocked", "job.activated"],
    ["manual", "blocked", "waiting", null],
  ])("a %s job to %s from %s is %s", (type, state, previous, name) => {
    expect(jobEventName(type, state, previous)).toBe(name);
  });
});

describe("agentEventName", () => {
  it.each([
    ["agent_connected", "connected", "agent.connected"],
    ["agent_lost", "lost", "agent.lost"],
    ["agent_stopping", "stopping", "agent.stopping"],
    ["agent_disconnected", "disconnected", "agent.disconnected"],
    ["agent_disconnected", "stopped", "agent.stopped"],
    ["agent_changed", "connected", null],
  ])("%s (%s) is %s", (kind, state, name) => {
    expect(agentEventName(kind, state)).toBe(name);
  });

  it("knows Buildkite's events and nothing else", () => {
    expect(isWebhookEvent("build.finished")).toBe(true);
    expect(isWebhookEvent("ping")).toBe(true);
    expect(isWebhookEvent("build.started")).toBe(false);
  });
});

describe("retry policy", () => {
  const policy = { baseMs: 1_000, maxMs: 60_000, maxAttempts: 5 };
  const now = new Date("2026-01-01T00:00:00Z");
  const later = new Date("2026-01-01T01:00:00Z");
  const fail = { ok: false, responseCode: 500, error: "answered 500", retryable: true };

  it("doubles the delay per attempt up to the maximum, with at most 20% jitter", () => {
    expect(backoffMs(policy, 1, 0)).toBe(1_000);
    expect(backoffMs(policy, 2, 0)).toBe(2_000);
    expect(backoffMs(policy, 4, 0)).toBe(8_000);
    expect(backoffMs(policy, 30, 0)).toBe(60_000);
    expect(backoffMs(policy, 1, 1)).toBe(1_200);
    expect(backoffMs(policy, 1, 7)).toBe(1_200);
  });

  it("succeeds, retries, or gives up on a refusal, after the last attempt, or past the give-up time", () => {
    expect(nextStep(policy, { ...fail, ok: true, error: "" }, 1, later, now, 0)).toEqual({ status: "succeeded" });
    expect(nextStep(policy, fail, 1, later, now, 0)).toEqual({
      status: "pending",
      nextAt: new Date(now.getTime() + 1_000),
    });
    expect(nextStep(policy, { ...fail, retryable: false }, 1, later, now, 0)).toEqual({ status: "failed" });
    expect(nextStep(policy, fail, 5, later, now, 0)).toEqual({ status: "failed" });
    expect(nextStep(policy, fail, 1, new Date(now.getTime() + 500), now, 0)).toEqual({ status: "failed" });
  });

  it("retries 408, 425, 429 and 5xx only", () => {
    expect([408, 425, 429, 500, 503, 599].every(retryableStatus)).toBe(true);
    expect([200, 301, 400, 401, 404, 410, 422].some(retryableStatus)).toBe(false);
  });
});

describe("webhookProblems", () => {
  const good = {
    url: "https://hooks.example/x",
    events: ["build.finished"],
    pipelineIds: [],
    tokenMode: "token" as const,
    description: "",
  };

  it("accepts a good webhook and an empty change", () => {
    expect(webhookProblems(good)).toEqual([]);
    expect(webhookProblems({})).toEqual([]);
  });

  it.each([
    [{ url: "ftp://x" }, "webhook_url"],
    [{ url: "not a url" }, "webhook_url"],
    [{ url: "https://u:p@x.example/" }, "webhook_url"],
    [{ url: `https://x.example/${"a".repeat(2100)}` }, "webhook_url"],
    [{ events: [] }, "events"],
    [{ events: ["build.started"] }, "events"],
    [{ events: ["ping", "ping"] }, "events"],
    [{ pipelineIds: ["my-pipeline"] }, "pipeline_ids"],
    [{ pipelineIds: Array(101).fill("00000000-0000-4000-8000-000000000000") }, "pipeline_ids"],
    [{ tokenMode: "hmac" as never }, "token_mode"],
    [{ description: "d".repeat(501) }, "description"],
  ])("refuses %j naming %s", (change, field) => {
    expect(webhookProblems({ ...good, ...change }).map((p) => p.field)).toEqual([field]);
  });
});

describe("signatureHeader", () => {
  it("is Buildkite's timestamp=<t>,signature=<hex HMAC-SHA256 of '<t>.<body>'>", () => {
    const body = '{"event":"ping"}';
    const expected = createHmac("sha256", "secret").update(`1700000000.${body}`).digest("hex");
    expect(signatureHeader("secret", body, 1_700_000_000)).toBe(`timestamp=1700000000,signature=${expected}`);
  });
});
