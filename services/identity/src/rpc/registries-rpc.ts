import type { ServiceImpl } from "@connectrpc/connect";
import type { RegistriesService } from "@conveyor/proto/identity";
import {
  hashSecret,
  invalidFields,
  isUuid,
  newId,
  newSecret,
  notFound,
  pageWindow,
  permissionDenied,
  toTimestamp,
} from "@conveyor/runtime";
import { canManageOrganizationSettings } from "../domain/access-policy.js";
import type { IdentityRepository, UserDoc } from "../store/identity-repository.js";
import type { RegistryDoc, RegistryRepository, RegistryTokenDoc } from "../store/registry-repository.js";
import { createActors } from "./actors.js";
import { userMessage } from "./identity-message.js";
import { insertNamed, nameAndSlug, requireOrganization } from "./records.js";

/** Prefix of registry token secrets, so a leaked one is recognisable. */
const REGISTRY_TOKEN_PREFIX = "bkpt_";

/** What the registries RPCs work with. */
export interface RegistryRpcsDeps {
  identity: IdentityRepository;
  registries: RegistryRepository;
  now: () => Date;
}

const registryMessage = (r: RegistryDoc) => ({
  id: r._id,
  organizationId: r.organizationId,
  slug: r.slug,
  name: r.name,
  ecosystem: r.ecosystem,
  createdAt: toTimestamp(r.createdAt),
});

const tokenMessage = (t: RegistryTokenDoc, creator: UserDoc | undefined) => ({
  id: t._id,
  registryId: t.registryId,
  organizationId: t.organizationId,
  description: t.description,
  createdAt: toTimestamp(t.createdAt),
  ...(creator ? { createdBy: userMessage(creator) } : {}),
});

/** The registries service's RPCs: package registries and the tokens that reach them. */
export function createRegistryRpcs(deps: RegistryRpcsDeps): ServiceImpl<typeof RegistriesService> {
  const { identity, registries, now } = deps;

  const { actorOf } = createActors(identity);

  const requireRegistry = async (organizationId: string, ref: string) => {
    const registry =
      ref === ""
        ? null
        : isUuid(ref)
          ? await registries.findRegistry(organizationId, { id: ref.toLowerCase() })
          : await registries.findRegistry(organizationId, { slug: ref });
    if (!registry) throw notFound("registry");
    return registry;
  };

  const requireToken = async (registryId: string, id: string) => {
    const token = isUuid(id) ? await registries.findToken(registryId, id.toLowerCase()) : null;
    if (!token) throw notFound("token");
    return token;
  };

  /** Changes need an actor the policy lets manage organization settings; the registry must exist first. */
  const requireManager = async (organizationId: string, actorId: string) => {
    if (!canManageOrganizationSettings(await actorOf(organizationId, actorId))) {
      throw permissionDenied();
    }
  };

  const creator = async (userId: string) =>
    isUuid(userId) ? ((await identity.findUser(userId)) ?? undefined) : undefined;

  const description = (raw: string) => {
    const trimmed = raw.trim();
    if (trimmed === "") throw invalidFields([{ field: "description", code: "can't be blank" }]);
    return trimmed;
  };

  return {
    async createRegistry(req) {
      const org = await requireOrganization(identity, req.organization);
      const { name, slug } = nameAndSlug(req.name);
      const registry: RegistryDoc = {
        _id: newId(),
        organizationId: org._id,
        slug,
        name,
        ecosystem: req.ecosystem.trim(),
        createdAt: now(),
      };
      await insertNamed(() => registries.insertRegistry(registry));
      return { registry: registryMessage(registry) };
    },

    async getRegistry(req) {
      return { registry: registryMessage(await requireRegistry(req.organizationId, req.registry)) };
    },

    async createRegistryToken(req) {
      const registry = await requireRegistry(req.organizationId, req.registry);
      await requireManager(req.organizationId, req.actorId);
      const secret = newSecret(REGISTRY_TOKEN_PREFIX);
      const token: RegistryTokenDoc = {
        _id: newId(),
        organizationId: registry.organizationId,
        registryId: registry._id,
        hash: hashSecret(secret),
        description: description(req.description),
        createdAt: now(),
        createdBy: req.actorId,
      };
      await registries.insertToken(token);
      return {
        token: tokenMessage(token, await creator(token.createdBy)),
        registry: registryMessage(registry),
        secret,
      };
    },

    async getRegistryToken(req) {
      const registry = await requireRegistry(req.organizationId, req.registry);
      const token = await requireToken(registry._id, req.id);
      return { token: tokenMessage(token, await creator(token.createdBy)), registry: registryMessage(registry) };
    },

    async listRegistryTokens(req) {
      const registry = await requireRegistry(req.organizationId, req.registry);
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await registries.listTokens(registry._id, skip, perPage);
      const ids = [...new Set(page.items.map((t) => t.createdBy).filter(isUuid))];
      const users = new Map((await identity.findUsers(ids)).map((u) => [u._id, u]));
      return {
        tokens: page.items.map((t) => tokenMessage(t, users.get(t.createdBy))),
        registry: registryMessage(registry),
        totalCount: page.total,
      };
    },

    async updateRegistryToken(req) {
      const registry = await requireRegistry(req.organizationId, req.registry);
      const current = await requireToken(registry._id, req.id);
      await requireManager(req.organizationId, req.actorId);
      const updated = await registries.setTokenDescription(registry._id, current._id, description(req.description));
      if (!updated) throw notFound("token");
      return { token: tokenMessage(updated, await creator(updated.createdBy)), registry: registryMessage(registry) };
    },

    async deleteRegistryToken(req) {
      const registry = await requireRegistry(req.organizationId, req.registry);
      const current = await requireToken(registry._id, req.id);
      await requireManager(req.organizationId, req.actorId);
      if (!(await registries.deleteToken(registry._id, current._id))) throw notFound("token");
      return {};
    },
  };
}
