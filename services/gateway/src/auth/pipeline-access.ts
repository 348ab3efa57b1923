import { type OrganizationAccess, type PipelineAccess, Role } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { FastifyRequest } from "fastify";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { HttpError } from "../errors/http-error.js";

/** Something a caller may want to do with a pipeline: read it and its builds, build, or edit the pipeline. */
export type PipelineAction = "read" | "build" | "edit";

/** A caller's access to some pipelines: the same for every pipeline of an organization, or per pipeline. */
export interface AccessiblePipelines {
  /** Organizations whose every pipeline the caller may read, with what they may do there. */
  everywhere: Map<string, PipelineAccess>;
  /** Pipelines the caller may read through their teams, elsewhere. */
  pipelines: Map<string, PipelineAccess>;
}

/** No access at all: a pipeline the caller must not learn exists. */
const NONE: Pick<PipelineAccess, "read" | "build" | "edit"> = { read: false, build: false, edit: false };

/**
 * The gateway's side of pipeline access. Identity's access policy decides everything: it puts the access that holds
 * for every pipeline of an organization on the principal (administrators; members of teams-disabled organizations),
 * and answers per pipeline when the caller's teams decide, at most one call per request.
 */
export function createPipelineAccess(clients: Pick<GatewayClients, "teams" | "pipelines">) {
  /** The caller's access to one pipeline of an organization. */
  const of = async (request: FastifyRequest, access: OrganizationAccess, pipelineId: string) => {
    if (access.allPipelines) return access.allPipelines;
    const res = await clients.teams.getPipelineAccess({
      organizationId: access.organization?.id ?? "",
      userId: request.principal?.user?.id ?? "",
      pipelineIds: [pipelineId],
    });
    return res.pipelines[0] ?? NONE;
  };

  /**
   * The caller's access to a pipeline they want to act on: one they may not read is 404 "No pipeline found"
   * (as if it did not exist), an action they may not take on one they can read is 403 "Forbidden".
   */
  const require = async (
    request: FastifyRequest,
    access: OrganizationAccess,
    pipeline: Pipeline,
    action: PipelineAction,
  ) => {
    const granted = await of(request, access, pipeline.id);
    if (!granted.read) throw new HttpError(404, "No pipeline found");
    if (!granted[action]) throw new HttpError(403, "Forbidden");
    return granted;
  };

  return {
    of,
    require,

    /**
     * The pipeline a route names by slug within an organization, when the caller may take `action` on it: unknown or
     * not readable → 404 "No pipeline found", action not allowed → 403 "Forbidden".
     */
    async pipeline(request: FastifyRequest, access: OrganizationAccess, slug: string, action: PipelineAction) {
      const res = await clients.pipelines.getPipeline({
        organizationId: access.organization?.id ?? "",
        pipeline: slug,
      });
      if (!res.pipeline) throw new HttpError(404, "No pipeline found");
      const granted = await require(request, access, res.pipeline, action);
      return { pipeline: res.pipeline, canBuild: granted.build, canEdit: granted.edit };
    },

    /** What the caller may see across some organizations, for lists. */
    async accessible(request: FastifyRequest, accesses: readonly OrganizationAccess[]): Promise<AccessiblePipelines> {
      const everywhere = new Map<string, PipelineAccess>();
      const byTeams: string[] = [];
      for (const a of accesses) {
        const id = a.organization?.id;
        if (!id) continue;
        if (!a.allPipelines) byTeams.push(id);
        else if (a.allPipelines.read) everywhere.set(id, a.allPipelines);
      }
      const pipelines = new Map<string, PipelineAccess>();
      if (byTeams.length > 0) {
        const res = await clients.teams.listAccessiblePipelines({
          organizationIds: byTeams,
          userId: request.principal?.user?.id ?? "",
        });
        for (const p of res.pipelines) if (p.read) pipelines.set(p.pipelineId, p);
      }
      return { everywhere, pipelines };
    },
  };
}

export type PipelineAccessChecks = ReturnType<typeof createPipelineAccess>;

/** Whether the caller is an administrator of the organization (who may create a pipeline without teams). */
export function isOrganizationAdmin(access: OrganizationAccess): boolean {
  return access.role === Role.ADMIN;
}
