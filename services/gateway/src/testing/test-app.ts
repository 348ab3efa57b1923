import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { AgentsService } from "@conveyor/proto/agents";
import { AnnotationsService } from "@conveyor/proto/annotations";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { BuildsService } from "@conveyor/proto/builds";
import {
  IdentityService,
  type Organization,
  OrganizationSchema,
  PipelineAccessLevel,
  type Principal,
  PrincipalSchema,
  RegistriesService,
  Role,
  RulesService,
  TeamsService,
  type User,
  UserSchema,
} from "@conveyor/proto/identity";
import { NotificationsService } from "@conveyor/proto/notifications";
import { OidcService } from "@conveyor/proto/oidc";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { SecretsService } from "@conveyor/proto/secrets";
import { SourceProvidersService } from "@conveyor/proto/source-providers";
import { acceptRequestId, propagateRequestId, REQUEST_ID_HEADER } from "@conveyor/runtime";
import { type AppDeps, buildApp } from "../app/build-app.js";
import type { GatewayClients } from "../clients/gateway-clients.js";

/** Fixed data behind the in-memory identity fake used by gateway unit tests. */
export interface FakeWorld {
  orgs: Organization[];
  users: User[];
  /** token secret → principal */
  tokens: Map<string, Principal>;
  revoked: string[];
}

/** An organization whose id is made from its slug. */
export function makeOrg(slug: string, name = slug): Organization {
  return create(OrganizationSchema, {
    id: `00000000-0000-4000-8000-${slug
      .padStart(12, "0")
      .slice(-12)
      .replace(/[^0-9a-f]/g, "a")}`,
    slug,
    name,
    createdAt: timestampFromDate(new Date("2026-01-02T03:04:05.678Z")),
  });
}

/** A user whose id is made from `n`, with an email made from the name. */
export function makeUser(n: number, name: string): User {
  return create(UserSchema, {
    id: `11111111-0000-4000-8000-${String(n).padStart(12, "0")}`,
    name,
    email: `${name.toLowerCase()}@example.com`,
    createdAt: timestampFromDate(new Date("2026-01-01T00:00:00.000Z")),
  });
}

/**
 * The organization-wide pipeline access identity puts on a principal (see identity's access policy): administrators
 * may do everything, members of teams-disabled organizations read and build, and otherwise teams decide (unset).
 */
function allPipelines(organization: Organization, role: Role) {
  if (role === Role.ADMIN)
    return { level: PipelineAccessLevel.MANAGE_BUILD_AND_READ, read: true, build: true, edit: true };
  if (organization.teamsEnabled) return undefined;
  return { level: PipelineAccessLevel.BUILD_AND_READ, read: true, build: true, edit: false };
}

/** The principal of a token of `user` with `scopes`, in `orgs` with the given roles. */
export function makePrincipal(user: User, scopes: string[], orgs: Array<[Organization, Role]>): Principal {
  return create(PrincipalSchema, {
    token: { id: `22222222-0000-4000-8000-${user.id.slice(-12)}`, userId: user.id, scopes, description: "test" },
    user,
    organizations: orgs.map(([organization, role]) => ({
      organization,
      role,
      allPipelines: allPipelines(organization, role),
    })),
  });
}

/** An identity fake over a FakeWorld: enough behaviour for the gateway's routes. */
function fakeIdentity(world: FakeWorld): Partial<ServiceImpl<typeof IdentityService>> {
  return {
    authenticateAccessToken(req) {
      const principal = world.tokens.get(req.secret);
      if (!principal) throw new ConnectError("invalid", Code.Unauthenticated);
      return { principal };
    },
    getOrganization(req) {
      const organization = world.orgs.find((o) => o.id === req.id || o.slug === req.slug);
      if (!organization) throw new ConnectError("No organization found", Code.NotFound);
      return { organization };
    },
    listOrganizations(req) {
      const perPage = req.perPage || 30;
      const page = req.page || 1;
      const orgs = world.orgs.filter((o) => req.ids.includes(o.id)).sort((a, b) => (a.name < b.name ? -1 : 1));
      return { organizations: orgs.slice((page - 1) * perPage, page * perPage), totalCount: orgs.length };
    },
    listMembers(req) {
      const perPage = req.perPage || 30;
      const page = req.page || 1;
      const members = world.users.map((user) => ({ user, role: Role.MEMBER }));
      return { members: members.slice((page - 1) * perPage, page * perPage), totalCount: members.length };
    },
    getMember(req) {
      const user = world.users.find((u) => u.id === req.userId);
      if (!user) throw new ConnectError("No user found", Code.NotFound);
      return { member: { user, role: Role.MEMBER } };
    },
    revokeAccessToken(req) {
      world.revoked.push(req.id);
      return {};
    },
  };
}

/**
 * In-memory implementations a test hands in for the backend services (default: none), and identity RPCs beyond (or
 * instead of) the FakeWorld's.
 */
export interface FakeServices {
  identity?: Partial<ServiceImpl<typeof IdentityService>>;
  pipelines?: Partial<ServiceImpl<typeof PipelinesService>>;
  builds?: Partial<ServiceImpl<typeof BuildsService>>;
  annotations?: Partial<ServiceImpl<typeof AnnotationsService>>;
  teams?: Partial<ServiceImpl<typeof TeamsService>>;
  rules?: Partial<ServiceImpl<typeof RulesService>>;
  registries?: Partial<ServiceImpl<typeof RegistriesService>>;
  agents?: Partial<ServiceImpl<typeof AgentsService>>;
  secrets?: Partial<ServiceImpl<typeof SecretsService>>;
  oidc?: Partial<ServiceImpl<typeof OidcService>>;
  artifacts?: Partial<ServiceImpl<typeof ArtifactsService>>;
  sourceProviders?: Partial<ServiceImpl<typeof SourceProvidersService>>;
  notifications?: Partial<ServiceImpl<typeof NotificationsService>>;
}

/**
 * Fails a call that carries no request id: every call the gateway makes while serving a request must carry its id
 * (from the request's context, by propagateRequestId), so a call made outside that context fails the test that made it.
 */
const requireRequestId: Interceptor = (next) => async (req) => {
  if (!req.header.get(REQUEST_ID_HEADER)) {
    throw new ConnectError(`${req.method.name} was called without a request id`, Code.Internal);
  }
  return next(req);
};

/** Builds the gateway app over in-memory fakes of every backend service. */
export async function buildTestApp(
  world: FakeWorld,
  services: FakeServices = {},
  artifacts: Partial<AppDeps["config"]["artifacts"]> = {},
  extra: Pick<AppDeps, "rateLimiter" | "logger" | "live"> = {},
  clientLimits?: AppDeps["config"]["clientLimits"],
) {
  const transport = createRouterTransport(
    (router) => {
      router.service(IdentityService, { ...fakeIdentity(world), ...services.identity });
      router.service(PipelinesService, services.pipelines ?? {});
      router.service(BuildsService, services.builds ?? {});
      router.service(AnnotationsService, services.annotations ?? {});
      router.service(TeamsService, services.teams ?? {});
      router.service(RulesService, services.rules ?? {});
      router.service(RegistriesService, services.registries ?? {});
      router.service(ArtifactsService, services.artifacts ?? {});
      router.service(AgentsService, services.agents ?? {});
      router.service(SecretsService, services.secrets ?? {});
      router.service(OidcService, services.oidc ?? {});
      router.service(SourceProvidersService, services.sourceProviders ?? {});
      router.service(NotificationsService, services.notifications ?? {});
      // As the real clients and servers do: calls carry the request id of the context they are made in.
    },
    {
      transport: { interceptors: [propagateRequestId] },
      router: { interceptors: [requireRequestId, acceptRequestId] },
    },
  );
  const clients: GatewayClients = {
    identity: createClient(IdentityService, transport),
    teams: createClient(TeamsService, transport),
    rules: createClient(RulesService, transport),
    registries: createClient(RegistriesService, transport),
    pipelines: createClient(PipelinesService, transport),
    builds: createClient(BuildsService, transport),
    annotations: createClient(AnnotationsService, transport),
    artifacts: createClient(ArtifactsService, transport),
    agents: createClient(AgentsService, transport),
    secrets: createClient(SecretsService, transport),
    oidc: createClient(OidcService, transport),
    sourceProviders: createClient(SourceProvidersService, transport),
    notifications: createClient(NotificationsService, transport),
  };
  return buildApp({
    config: {
      publicUrl: "http://api.test",
      webUrl: "http://web.test",
      tokenCacheTtlMs: 60_000,
      bodyLimitBytes: 4096,
      agentCredentialTtlMs: 60_000,
      agentLogs: { chunkBytes: 102_400, maxLogBytes: 1024 * 1024 },
      artifacts: {
        storeUrl: "http://store.test",
        bucket: "test-bucket",
        proxy: false,
        urlBase: "http://store.test",
        ...artifacts,
      },
      clientLimits,
    },
    clients,
    ...extra,
  });
}
