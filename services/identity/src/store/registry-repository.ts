import type { Collection, Db } from "mongodb";
import { insertUnique, type Page } from "./identity-repository.js";

export interface RegistryDoc {
  _id: string;
  organizationId: string;
  slug: string;
  name: string;
  ecosystem: string;
  createdAt: Date;
}

export interface RegistryTokenDoc {
  _id: string;
  organizationId: string;
  registryId: string;
  /** SHA-256 of the secret. */
  hash: string;
  description: string;
  createdAt: Date;
  /** The creating user's UUID; empty when an operator tool created the token. */
  createdBy: string;
}

/** Persistence of package registries and their tokens. */
export interface RegistryRepository {
  insertRegistry(registry: RegistryDoc): Promise<void>;
  findRegistry(organizationId: string, by: { id?: string; slug?: string }): Promise<RegistryDoc | null>;
  insertToken(token: RegistryTokenDoc): Promise<void>;
  findToken(registryId: string, id: string): Promise<RegistryTokenDoc | null>;
  listTokens(registryId: string, skip: number, limit: number): Promise<Page<RegistryTokenDoc>>;
  /** Returns the token as stored afterwards, or null when there is none. */
  setTokenDescription(registryId: string, id: string, description: string): Promise<RegistryTokenDoc | null>;
  deleteToken(registryId: string, id: string): Promise<boolean>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoRegistryRepository(db: Db): Promise<RegistryRepository> {
  const registries: Collection<RegistryDoc> = db.collection("registries");
  const tokens: Collection<RegistryTokenDoc> = db.collection("registry_tokens");
  await Promise.all([
    registries.createIndex({ organizationId: 1, slug: 1 }, { unique: true, name: "org_slug_unique" }),
    tokens.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
    tokens.createIndex({ registryId: 1, createdAt: 1, _id: 1 }, { name: "registry_tokens_in_order" }),
  ]);
  return {
    insertRegistry: (registry) => insertUnique(registries, registry, "slug"),
    findRegistry: (organizationId, by) =>
      registries.findOne(by.id ? { _id: by.id, organizationId } : { slug: by.slug ?? "", organizationId }),
    insertToken: (token) => insertUnique(tokens, token, "token"),
    findToken: (registryId, id) => tokens.findOne({ _id: id, registryId }),
    async listTokens(registryId, skip, limit) {
      const [items, total] = await Promise.all([
        tokens.find({ registryId }).sort({ createdAt: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        tokens.countDocuments({ registryId }),
      ]);
      return { items, total };
    },
    setTokenDescription: (registryId, id, description) =>
      tokens.findOneAndUpdate({ _id: id, registryId }, { $set: { description } }, { returnDocument: "after" }),
    async deleteToken(registryId, id) {
      return (await tokens.deleteOne({ _id: id, registryId })).deletedCount === 1;
    },
  };
}
