import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type AuthenticateAgentCredentialResponse, CredentialKind } from "@conveyor/proto/agents";
import {
  type GetPipelineUploadRequest,
  JobSchema,
  PipelineUploadState,
  type PipelineUploadStatus,
  type UploadPipelineRequest,
} from "@conveyor/proto/builds";
import { invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg } from "../testing/test-app.js";

// `buildkite-agent pipeline upload` as the agent calls it: POST /v3/jobs/{id}/pipelines with the parsed pipeline
// and the upload's uuid, over in-memory fakes of the agents and builds services.
const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const OTHER_JOB = "44444444-0000-4000-8000-000000000002";
const BUILD = "55555555-0000-4000-8000-000000000001";
const AGENT = "66666666-0000-4000-8000-000000000001";
const UUID = "0190c0de-0000-7000-8000-000000000001";

type Credential = Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown">;
const base = { organizationId: acme.id, clusterId: "c1", tokenId: "t1" };
const credentials: Record<string, Credential> = {
  bkaj_job: { ...base, kind: CredentialKind.JOB, agentId: AGENT, jobId: JOB, buildId: BUILD },
  bkaj_other: { ...base, kind: CredentialKind.JOB, agentId: AGENT, jobId: OTHER_JOB, buildId: BUILD },
  bkaa_agent: { ...base, kind: CredentialKind.AGENT, agentId: AGENT, jobId: "", buildId: "" },
  bkaa_stranger: { ...base, kind: CredentialKind.AGENT, agentId: "someone-else", jobId: "", buildId: "" },
  bkat_reg: { ...base, kind: CredentialKind.REGISTRATION, agentId: "", jobId: "", buildId: "" },
};

/** What the fake builds service does with the next upload. */
let answer: (req: UploadPipelineRequest) => { jobsAdded: number } = () => ({ jobsAdded: 1 });
const uploads: UploadPipelineRequest[] = [];
/** What the fake builds service says of an upload's status. */
let statusOf: (req: GetPipelineUploadRequest) => Partial<PipelineUploadStatus> = () => ({
  state: PipelineUploadState.APPLIED,
  jobsAdded: 1,
});

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
      },
      builds: {
        getJob(req) {
          if (req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
          return { job: create(JobSchema, { id: JOB, buildId: BUILD, state: "running", agent: { id: AGENT } }) };
        },
        uploadPipeline(req) {
          uploads.push(req);
          return answer(req);
        },
        getPipelineUpload(req) {
          return { status: { state: PipelineUploadState.UNSPECIFIED, jobsAdded: 0, message: "", ...statusOf(req) } };
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  uploads.length = 0;
  answer = () => ({ jobsAdded: 1 });
});

const upload = (payload: unknown, secret = "bkaj_job", jobId = JOB, query = "") =>
  app.inject({
    method: "POST",
    url: `/v3/jobs/${jobId}/pipelines${query}`,
    headers: { authorization: `Token ${secret}`, "content-type": "application/json" },
    payload: typeof payload === "string" ? payload : JSON.stringify(payload),
  });

const STEPS = { steps: [{ label: "generated", command: "echo hi" }] };

describe("POST /v3/jobs/{id}/pipelines", () => {
  it("uploads the parsed pipeline as JSON text with the uuid, answering 201 {}", async () => {
    const res = await upload({ uuid: UUID, pipeline: STEPS });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({});
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({ jobId: JOB, uuid: UUID, replace: false });
    expect(JSON.parse(uploads[0]?.pipeline ?? "")).toEqual(STEPS);
  });

  it("passes replace, and a pipeline sent as YAML text or as a list of steps", async () => {
    await upload({ uuid: UUID, pipeline: "steps:\n  - command: echo yaml\n", replace: true });
    await upload({ uuid: UUID, pipeline: [{ command: "echo list" }] });
    expect(uploads.map((u) => [u.pipeline, u.replace])).toEqual([
      ["steps:\n  - command: echo yaml\n", true],
      ['[{"command":"echo list"}]', false],
    ]);
  });

  it("takes a pipeline beyond the gateway's usual body limit", async () => {
    const big = { steps: Array.from({ length: 200 }, (_, i) => ({ label: `step ${i}`, command: "x".repeat(100) })) };
    expect(JSON.stringify(big).length).toBeGreaterThan(4096);
    const res = await upload({ uuid: UUID, pipeline: big });
    expect(res.statusCode).toBe(201);
    expect(JSON.parse(uploads[0]?.pipeline ?? "").steps).toHaveLength(200);
  });

  it("refuses a body over 2 MiB with 413, without asking the service", async () => {
    const res = await upload({ uuid: UUID, pipeline: "x".repeat(2 * 1024 * 1024) });
    expect(res.statusCode).toBe(413);
    expect(uploads).toHaveLength(0);
  });

  it.each([
    ["no uuid", { pipeline: STEPS }],
    ["an empty uuid", { uuid: "", pipeline: STEPS }],
    ["a uuid of 65 characters", { uuid: "u".repeat(65), pipeline: STEPS }],
    ["no pipeline", { uuid: UUID }],
    ["a pipeline that is a number", { uuid: UUID, pipeline: 42 }],
    ["replace that is no boolean", { uuid: UUID, pipeline: STEPS, replace: "yes" }],
  ])("answers 422 Validation Failed for %s, without asking the service", async (_label, body) => {
    const res = await upload(body);
    expect(res.statusCode).toBe(422);
    expect(res.json().message).toBe("Validation Failed");
    expect(uploads).toHaveLength(0);
  });

  it("lets an agent token upload for the job its agent holds", async () => {
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkaa_agent")).statusCode).toBe(201);
    expect(uploads[0]?.jobId).toBe(JOB);
  });

  it("answers 404 to a job token for another job, and to an agent token for a job its agent does not hold", async () => {
    const other = await upload({ uuid: UUID, pipeline: STEPS }, "bkaj_other");
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ message: "No job found" });
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkaa_stranger")).statusCode).toBe(404);
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkaa_agent", OTHER_JOB)).statusCode).toBe(404);
    expect(uploads).toHaveLength(0);
  });

  it("answers 401 to a registration token, an unknown token and no token", async () => {
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkat_reg")).statusCode).toBe(401);
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkaj_unknown")).statusCode).toBe(401);
    const bare = await app.inject({ method: "POST", url: `/v3/jobs/${JOB}/pipelines`, payload: { uuid: UUID } });
    expect(bare.statusCode).toBe(401);
    expect(uploads).toHaveLength(0);
  });

  it("answers 422 with every field problem in the message, which is what the agent prints", async () => {
    answer = () => {
      throw invalidFields([
        { field: "pipeline.steps.0", code: "must have a command" },
        { field: "pipeline.steps.1.depends_on", code: 'names no step with key "nope"' },
      ]);
    };
    const res = await upload({ uuid: UUID, pipeline: STEPS });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      message:
        'The pipeline could not be uploaded: pipeline.steps.0 must have a command; pipeline.steps.1.depends_on names no step with key "nope"',
      errors: [
        { field: "pipeline.steps.0", code: "must have a command" },
        { field: "pipeline.steps.1.depends_on", code: 'names no step with key "nope"' },
      ],
    });
  });

  it("lists ten problems and counts the rest", async () => {
    answer = () => {
      throw invalidFields(Array.from({ length: 13 }, (_, i) => ({ field: `pipeline.steps.${i}`, code: "is bad" })));
    };
    const res = await upload({ uuid: UUID, pipeline: STEPS });
    expect(res.statusCode).toBe(422);
    const { message, errors } = res.json();
    expect(message).toContain("pipeline.steps.9 is bad; and 3 more");
    expect(message).not.toContain("pipeline.steps.10 ");
    expect(errors).toHaveLength(13);
  });

  it("answers 422 with the service's text when an invalid argument names no field", async () => {
    answer = () => {
      throw new ConnectError("the pipeline is not valid YAML", Code.InvalidArgument);
    };
    const res = await upload({ uuid: UUID, pipeline: "steps: [" });
    expect(res.statusCode).toBe(422);
    expect(res.json().message).toBe("The pipeline could not be uploaded: the pipeline is not valid YAML");
  });

  it("answers 422 with the reason when the job or build may not take steps any more", async () => {
    answer = () => {
      throw new ConnectError("Only a running job can upload steps", Code.FailedPrecondition);
    };
    const res = await upload({ uuid: UUID, pipeline: STEPS });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ message: "Only a running job can upload steps" });
  });
});

describe("asynchronous upload: POST /v3/jobs/{id}/pipelines?async=true, then GET …/pipelines/{uuid}", () => {
  const poll = (uuid = UUID, secret = "bkaj_job", jobId = JOB) =>
    app.inject({
      method: "GET",
      url: `/v3/jobs/${jobId}/pipelines/${uuid}`,
      headers: { authorization: `Token ${secret}` },
    });

  it("answers 202 with the Location the agent polls and when to poll, having asked for an asynchronous upload", async () => {
    const res = await upload({ uuid: UUID, pipeline: STEPS }, "bkaj_job", JOB, "?async=true");
    expect(res.statusCode).toBe(202);
    expect(res.headers.location).toBe(`/v3/jobs/${JOB}/pipelines/${UUID}`);
    // The agent's own pattern for it: jobs/(?P<jobID>[^/]+)/pipelines/(?P<uploadUUID>[^/]+)
    expect(String(res.headers.location)).toMatch(new RegExp(`jobs/${JOB}/pipelines/${UUID}$`));
    expect(res.headers["retry-after"]).toBe("1");
    expect(uploads[0]).toMatchObject({ jobId: JOB, uuid: UUID, asynchronous: true });
  });

  it("uploads synchronously without async, and with async=false", async () => {
    expect((await upload({ uuid: UUID, pipeline: STEPS }, "bkaj_job", JOB, "?async=false")).statusCode).toBe(201);
    expect(uploads[0]?.asynchronous).toBe(false);
  });

  it.each([
    [PipelineUploadState.PENDING, "pending", "1"],
    [PipelineUploadState.PROCESSING, "processing", "1"],
    [PipelineUploadState.APPLIED, "applied", undefined],
  ])("answers the state the agent reads (%s → %s)", async (state, name, retryAfter) => {
    statusOf = () => ({ state });
    const res = await poll();
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ state: name, message: "" });
    expect(res.headers["retry-after"]).toBe(retryAfter);
  });

  it("answers rejected with the reason, which the agent prints before it stops", async () => {
    statusOf = () => ({ state: PipelineUploadState.REJECTED, message: "The pipeline could not be uploaded: x" });
    expect((await poll()).json()).toEqual({ state: "rejected", message: "The pipeline could not be uploaded: x" });
  });

  it("asks about the job the token holds only: 404 for another job, 401 without a job's or agent's token", async () => {
    const asked: string[] = [];
    statusOf = (req) => {
      asked.push(req.jobId);
      return { state: PipelineUploadState.APPLIED };
    };
    expect((await poll(UUID, "bkaj_other")).statusCode).toBe(404);
    expect((await poll(UUID, "bkat_reg")).statusCode).toBe(401);
    expect((await poll(UUID, "bkaa_agent")).statusCode).toBe(200);
    expect(asked).toEqual([JOB]);
    // A uuid no upload can have names nothing.
    expect((await poll("u".repeat(65))).statusCode).toBe(404);
    expect(asked).toEqual([JOB]);
  });
});
