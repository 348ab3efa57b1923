import { DuplicateError } from "./identity-repository.js";
import type { RegistryDoc, RegistryRepository, RegistryTokenDoc } from "./registry-repository.js";

const copy = <T>(v: T): T => structuredClone(v);

/** An in-memory RegistryRepository with the same unique rules as the MongoDB one, for unit tests. */
export function createMemoryRegistryRepository(): RegistryRepository {
  const registries: RegistryDoc[] = [];
  let tokens: RegistryTokenDoc[] = [];
  return {
    async insertRegistry(registry) {
      if (registries.some((r) => r.organizationId === registry.organizationId && r.slug === registry.slug)) {
        throw new DuplicateError("slug");
      }
      registries.push(copy(registry));
    },
    findRegistry: async (organizationId, by) =>
      copy(
        registries.find(
          (r) => r.organizationId === organizationId && (by.id ? r._id === by.id : r.slug === (by.slug ?? "")),
        ) ?? null,
      ),
    async insertToken(token) {
      if (tokens.some((t) => t.hash === token.hash)) throw new DuplicateError("token");
      tokens.push(copy(token));
    },
    findToken: async (registryId, id) => copy(tokens.find((t) => t.registryId === registryId && t._id === id) ?? null),
    async listTokens(registryId, skip, limit) {
      const mine = tokens
        .filter((t) => t.registryId === registryId)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : 1));
      return { items: mine.slice(skip, skip + limit).map(copy), total: mine.length };
    },
    async setTokenDescription(registryId, id, description) {
      const token = tokens.find((t) => t.registryId === registryId && t._id === id);
      if (!token) return null;
      token.description = description;
      return copy(token);
    },
    async deleteToken(registryId, id) {
      const before = tokens.length;
      tokens = tokens.filter((t) => !(t.registryId === registryId && t._id === id));
      return tokens.length < before;
    },
  };
}
