import { Code, ConnectError } from "@connectrpc/connect";
import {
  type AuthenticateAgentCredentialResponse,
  CredentialKind,
  type PauseAgentRequest,
  type ResumeAgentRequest,
  type StopAgentRequest,
} from "@conveyor/proto/agents";
import type { AnnotateBuildRequest, RemoveAnnotationRequest } from "@conveyor/proto/annotations";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg } from "../testing/test-app.js";

// Annotations and agent control from inside a job, as `buildkite-agent annotate`, `annotation remove`, `pause`,
// `resume` and `stop` call them.
const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const BUILD = "55555555-0000-4000-8000-000000000001";
const AGENT = "66666666-0000-4000-8000-000000000001";

type Credential = Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown">;
const base = { organizationId: acme.id, clusterId: "c1", tokenId: "t1" };
const credentials: Record<string, Credential> = {
  bkaj_job: { ...base, kind: CredentialKind.JOB, agentId: AGENT, jobId: JOB, buildId: BUILD },
  bkaa_agent: { ...base, kind: CredentialKind.AGENT, agentId: AGENT, jobId: "", buildId: "" },
  bkat_reg: { ...base, kind: CredentialKind.REGISTRATION, agentId: "", jobId: "", buildId: "" },
};

const calls = {
  annotate: [] as AnnotateBuildRequest[],
  remove: [] as RemoveAnnotationRequest[],
  pause: [] as PauseAgentRequest[],
  resume: [] as ResumeAgentRequest[],
  stop: [] as StopAgentRequest[],
};

let app: FastifyInstance;
beforeAll(async () => {
  ({ app } = await buildTestApp(
    { orgs: [acme], users: [], tokens: new Map(), revoked: [] },
    {
      agents: {
        authenticateAgentCredential(req) {
          const found = credentials[req.secret];
          if (!found) throw new ConnectError("nope", Code.Unauthenticated);
          return found;
        },
        pauseAgent(req) {
          calls.pause.push(req);
          if (calls.pause.length > 2) throw new ConnectError("Agent is already paused", Code.FailedPrecondition);
          return {};
        },
        resumeAgent(req) {
          calls.resume.push(req);
          return {};
        },
        stopAgent(req) {
          calls.stop.push(req);
          return {};
        },
      },
      annotations: {
        annotateBuild(req) {
          calls.annotate.push(req);
          if (req.style === "purple")
            throw new ConnectError(
              'Annotation style "purple" is not one of success, info, warning, error',
              Code.InvalidArgument,
            );
          return {};
        },
        removeAnnotation(req) {
          calls.remove.push(req);
          if (req.context === "missing") throw new ConnectError("No annotation found", Code.NotFound);
          return {};
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  for (const list of Object.values(calls)) list.length = 0;
});

const send = (method: "POST" | "DELETE", url: string, payload?: unknown, secret = "bkaj_job") =>
  app.inject({
    method,
    url,
    headers: { authorization: `Token ${secret}` },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });

describe("POST /v3/jobs/{id}/annotations", () => {
  it("annotates the job's build with what the agent sent, its defaults left to the service", async () => {
    const res = await send("POST", `/v3/jobs/${JOB}/annotations`, {
      body: "## Tests\n",
      context: "junit.unit",
      style: "success",
      append: true,
      priority: 7,
      scope: "build",
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect(calls.annotate[0]).toMatchObject({
      buildId: BUILD,
      jobId: JOB,
      body: "## Tests\n",
      context: "junit.unit",
      style: "success",
      append: true,
      priority: 7,
      scope: "build",
    });
    await send("POST", `/v3/jobs/${JOB}/annotations`, { body: "x" });
    expect(calls.annotate[1]).toMatchObject({ context: "", style: "", append: false, scope: "" });
    expect(calls.annotate[1]?.priority).toBeUndefined();
  });

  it("takes a body of 1 MiB, beyond the gateway's usual body limit", async () => {
    const res = await send("POST", `/v3/jobs/${JOB}/annotations`, { body: "a".repeat(1024 * 1024) });
    expect(res.statusCode).toBe(200);
    expect(calls.annotate[0]?.body).toHaveLength(1024 * 1024);
    const tooLong = await send("POST", `/v3/jobs/${JOB}/annotations`, { body: "a".repeat(1024 * 1024 + 1) });
    expect(tooLong.statusCode).toBe(422);
  });

  it("answers 422 with the service's sentence as the message the agent prints", async () => {
    const res = await send("POST", `/v3/jobs/${JOB}/annotations`, { body: "x", style: "purple" });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ message: 'Annotation style "purple" is not one of success, info, warning, error' });
  });

  it("lets a job token annotate only through its own job", async () => {
    const other = "44444444-0000-4000-8000-000000000002";
    expect((await send("POST", `/v3/jobs/${other}/annotations`, { body: "x" })).statusCode).toBe(404);
    expect((await send("POST", `/v3/jobs/${JOB}/annotations`, { body: "x" }, "bkat_reg")).statusCode).toBe(401);
    expect(calls.annotate).toEqual([]);
  });
});

describe("DELETE /v3/jobs/{id}/annotations/{context}", () => {
  it("removes the context the agent escaped (dots as %2E), in the scope it names", async () => {
    const res = await send("DELETE", `/v3/jobs/${JOB}/annotations/junit%2Eunit%20tests?scope=job`);
    expect(res.statusCode).toBe(200);
    expect(calls.remove[0]).toMatchObject({ buildId: BUILD, jobId: JOB, context: "junit.unit tests", scope: "job" });
    await send("DELETE", `/v3/jobs/${JOB}/annotations/a%2Fb`);
    expect(calls.remove[1]).toMatchObject({ context: "a/b", scope: "" });
  });

  it("answers 404 when there is no such annotation", async () => {
    const res = await send("DELETE", `/v3/jobs/${JOB}/annotations/missing?scope=build`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ message: "No annotation found" });
  });
});

describe("POST /v3/pause, /v3/resume and /v3/stop", () => {
  it("pause the agent running the job, with its note and timeout", async () => {
    const res = await send("POST", "/v3/pause", { note: "too many llamas", timeout_in_minutes: 60 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect(calls.pause[0]).toMatchObject({
      organizationId: acme.id,
      id: AGENT,
      note: "too many llamas",
      timeoutInMinutes: 60,
    });
    expect(calls.pause[0]?.pausedBy).toBeUndefined();
    // The agent sends no body without flags; its access token works too.
    await send("POST", "/v3/pause", undefined, "bkaa_agent");
    expect(calls.pause[1]).toMatchObject({ id: AGENT, note: "" });
    expect(calls.pause[1]?.timeoutInMinutes).toBeUndefined();
    const again = await send("POST", "/v3/pause", {});
    expect(again.statusCode).toBe(422);
    expect(again.json()).toEqual({ message: "Agent is already paused" });
  });

  it("resume and stop it, with force when asked", async () => {
    expect((await send("POST", "/v3/resume")).statusCode).toBe(200);
    expect(calls.resume[0]).toMatchObject({ organizationId: acme.id, id: AGENT });
    await send("POST", "/v3/stop", {});
    await send("POST", "/v3/stop", { force: true });
    expect(calls.stop.map((s) => [s.id, s.force])).toEqual([
      [AGENT, false],
      [AGENT, true],
    ]);
  });

  it("need an agent or job credential", async () => {
    for (const path of ["/v3/pause", "/v3/resume", "/v3/stop"]) {
      expect((await send("POST", path, {}, "bkat_reg")).statusCode).toBe(401);
    }
    expect(calls.pause).toEqual([]);
  });
});
