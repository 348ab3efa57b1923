import { ann, buildPageWorld, JOB, RELEASE_TEAM } from "../../testing/build-page-world.js";

// The build page's actions over the gateway's test app: each answers 303 to the changed page, refuses a request
// without the session's CSRF token, takes the access its REST twin takes (404 unseen, 403 not allowed), calls the
// same RPC with the same arguments, and shows the builds service's refusals on the page.

const BUILD = "/acme/web/builds/7";

describe("the build's actions", () => {
  it("cancel the build and go back to it", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/cancel`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(BUILD);
    expect(w.calls.cancel).toEqual([7]);
  });

  it("rebuild, going to the new build", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/rebuild`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/acme/web/builds/8");
    expect(w.calls.rebuild).toEqual([7]);
  });

  it("retry every failed job that may be retried, and no passed, soft-failed or already retried one", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/retry-failed`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(BUILD);
    expect(w.calls.retry).toEqual([{ jobId: JOB.failed, user: expect.objectContaining({ id: ann.id }) }]);
  });

  it("are refused without the session's CSRF token, before anything is done", async () => {
    const w = await buildPageWorld();
    for (const action of [
      "cancel",
      "rebuild",
      "retry-failed",
      `jobs/${JOB.failed}/retry`,
      `jobs/${JOB.block}/unblock`,
    ]) {
      const res = await w.post(`${BUILD}/${action}`, "ann", [], { csrf: false });
      expect(res.statusCode).toBe(403);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    }
    const forged = await w.app.inject({
      method: "POST",
      url: `${BUILD}/cancel`,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: "conveyor_session=ann",
        origin: "https://evil.test",
      },
      payload: "_csrf=whatever",
    });
    expect(forged.statusCode).toBe(403);
    expect(w.calls).toMatchObject({ cancel: [], rebuild: [], retry: [], unblock: [] });
  });

  it("are 403 to a person who may only read the pipeline and 404 to one who may not see it, as REST answers", async () => {
    const w = await buildPageWorld();
    for (const action of ["cancel", "rebuild", "retry-failed", `jobs/${JOB.failed}/retry`]) {
      expect((await w.post(`/teamsorg/app/builds/7/${action}`, "rita")).statusCode).toBe(403);
      expect((await w.post(`${BUILD}/${action}`, "olga")).statusCode).toBe(404);
    }
    expect(w.calls).toMatchObject({ cancel: [], rebuild: [], retry: [] });
  });

  it("that the builds service refuses show its reason on the build's page, as REST's 422", async () => {
    const w = await buildPageWorld();
    // A forged retry of a job that passed: no button for it, and the service says why.
    const res = await w.post(`${BUILD}/jobs/${JOB.passed}/retry`);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain(
      '<div class="form-errors" role="alert"><p>Only failed, timed out or canceled jobs can be retried</p></div>',
    );
    expect(res.body).toContain('<h2 id="jobs-title">Jobs</h2>');
  });
});

describe("a job's actions", () => {
  it("retry a failed job, going to its new attempt", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/jobs/${JOB.failed}/retry`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`${BUILD}#44444444-0000-4000-8000-0000000000f1`);
    expect(w.calls.retry.map((r) => r.jobId)).toEqual([JOB.failed]);
  });

  it("unblock a step with its fields' values, a multiple select's choices as a list", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/jobs/${JOB.block}/unblock`, "ann", [
      ["field:version", "v2.1"],
      ["field:regions", ""],
      ["field:regions", "eu"],
      ["field:env", "production"],
      ["ignored", "x"],
    ]);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`${BUILD}#${JOB.block}`);
    expect(w.calls.unblock).toHaveLength(1);
    expect(w.calls.unblock[0]).toMatchObject({
      jobId: JOB.block,
      fields: { version: { values: ["v2.1"] }, regions: { values: ["", "eu"] }, env: { values: ["production"] } },
      callerTeams: [],
      readOnly: false,
      user: { id: ann.id },
    });
  });

  it("show the step's form again with the values given and the problems the service found", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`${BUILD}/jobs/${JOB.block}/unblock`, "ann", [
      ["field:version", `nope"><script>alert(1)</script>`],
      ["field:env", "staging"],
    ]);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain("Some values were not accepted.");
    expect(res.body).toContain("<li>fields.version must match the format v[0-9.]+</li>");
    expect(res.body).toContain(`name="field:version" value="nope&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`);
    expect(res.body).toContain('aria-invalid="true"');
    expect(res.body).toContain('<option value="staging" selected>Staging</option>');
    expect(res.body).not.toContain("<script>alert(1)");
  });

  it("unblock a team's step for a member of the team who may only read the pipeline; 403 for others", async () => {
    const w = await buildPageWorld();
    const res = await w.post(`/teamsorg/app/builds/7/jobs/${JOB.teamBlock}/unblock`, "rita");
    expect(res.statusCode).toBe(303);
    expect(w.calls.unblock[0]).toMatchObject({ callerTeams: [RELEASE_TEAM, "release"], readOnly: true });
    expect((await w.post(`/teamsorg/app/builds/7/jobs/${JOB.teamBlock}/unblock`, "olga")).statusCode).toBe(403);
    // A step without teams needs build access: Rita may only read.
    expect((await w.post(`/teamsorg/app/builds/7/jobs/${JOB.block}/unblock`, "rita")).statusCode).toBe(403);
  });
});
