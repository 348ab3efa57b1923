import { ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { callerOf, organizationAccess } from "../../auth/authenticate.js";
import { toErrorReply } from "../../errors/error-handler.js";
import { typed } from "../../route-declarations/declare.js";
import { BOUNDS, PipelineParams, text } from "../../route-declarations/params.js";
import { type NewBuildForm, readKeyValueLines } from "../pages/new-build-form.js";
import { createPipelinePage } from "../pages/pipeline-page.js";
import { buildPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";

/** The new build form's body, as the browser posts it (every field a string; the CSRF token is read by requireCsrf). */
const NewBuildBody = Type.Object({
  message: Type.Optional(text(BOUNDS.text)),
  commit: Type.Optional(text(BOUNDS.ref)),
  branch: Type.Optional(text(BOUNDS.ref)),
  env: Type.Optional(text(BOUNDS.value)),
  meta_data: Type.Optional(text(BOUNDS.value)),
});

/** The sentences a refused create shows on the form: each field error, or the service's message. */
function refusal(err: unknown): { status: number; errors: string[] } | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  const { status, body } = toErrorReply(err);
  if (status !== 422) return undefined;
  const fields = (body.errors as Array<{ field: string; code: string }> | undefined) ?? [];
  const errors = fields.length > 0 ? fields.map((e) => `${e.field} ${e.code}`) : [String(body.message)];
  return { status, errors };
}

/**
 * POST /{org}/{pipeline}/builds: the new build form. The same rules as the REST API's create (the person must be
 * allowed to build the pipeline: 404 if they cannot read it, 403 if they may only read it), the person as creator
 * and author, source "ui". A created build answers 303 to its page; a refused one (422) answers the pipeline page
 * with the form as the person filled it and what was wrong.
 */
export function createBuildAction(scope: FastifyInstance, deps: WebDeps): void {
  const servePipelinePage = createPipelinePage(deps);
  typed(scope).post(
    "/:org/:pipeline/builds",
    { preHandler: [deps.requireSignIn, deps.requireCsrf], schema: { params: PipelineParams, body: NewBuildBody } },
    async (request, reply) => {
      const { params } = request;
      const body = request.body;
      const access = organizationAccess(request, params.org);
      const { pipeline } = await deps.pipelineAccess.pipeline(request, access, params.pipeline, "build");
      const form: NewBuildForm = {
        message: body.message ?? "",
        commit: body.commit ?? "",
        branch: body.branch ?? "",
        env: body.env ?? "",
        metaData: body.meta_data ?? "",
        errors: [],
      };
      const env = readKeyValueLines(form.env, "Environment");
      const metaData = readKeyValueLines(form.metaData, "Meta-data");
      form.errors.push(...env.errors, ...metaData.errors);
      if (form.errors.length > 0) return servePipelinePage(request, reply, params, {}, { values: form, status: 422 });
      const creator = callerOf(request);
      try {
        const res = await deps.clients.builds.createBuild({
          // By id, as the REST API's create: the builds service keeps the pipelines it builds.
          pipelineId: pipeline.id,
          organizationId: pipeline.organizationId,
          organizationSlug: access.organization?.slug ?? "",
          creator,
          commit: form.commit.trim(),
          branch: form.branch.trim(),
          message: form.message,
          author: creator && { name: creator.name, email: creator.email },
          env: env.values,
          metaData: metaData.values,
          source: "ui",
        });
        return reply.redirect(buildPath(params.org, pipeline.slug, res.build?.number ?? 0), 303);
      } catch (err) {
        const refused = refusal(err);
        if (!refused) throw err;
        form.errors.push(...refused.errors);
        return servePipelinePage(request, reply, params, {}, { values: form, status: refused.status });
      }
    },
  );
}
