import type { Collection, Db } from "mongodb";
import type { CredentialEnvelope } from "./credential-envelope.js";

/** A source-provider connection as stored (collection `source_providers`; docs/statuses.md#connections). */
export interface SourceProviderDoc {
  _id: string;
  organizationId: string;
  /** github, github_enterprise, gitlab, bitbucket or gitea. */
  kind: string;
  /** The normalized API base URL. */
  apiUrl: string;
  /** The host whose repositories it serves (repositoryHostOfApiUrl). */
  repositoryHost: string;
  /** "token" or "github_app". */
  credentialType: string;
  /** A github_app credential's App id (not secret); absent for tokens. */
  appId?: string;
  /** The token, sealed (credential-envelope.ts); never answered, never logged. */
  credential: CredentialEnvelope;
  description: string;
  createdAt: Date;
  createdBy: string;
}

/** Persistence of connections. */
export interface SourceProviderRepository {
  insert(doc: SourceProviderDoc): Promise<void>;
  /** An organization's connections, oldest first. */
  list(organizationId: string): Promise<SourceProviderDoc[]>;
  count(organizationId: string): Promise<number>;
  get(organizationId: string, id: string): Promise<SourceProviderDoc | null>;
  /** Removes a connection; false when there was none. */
  remove(organizationId: string, id: string): Promise<boolean>;
  /** Up to `limit` connections whose credential was sealed under another key than `keyId` (rotation). */
  sealedWithOtherKey(keyId: string, limit: number): Promise<SourceProviderDoc[]>;
  /** Replaces a credential if it is still sealed under `previousKeyId` (compare-and-set); false otherwise. */
  replaceCredential(id: string, previousKeyId: string, credential: CredentialEnvelope): Promise<boolean>;
}

/** The binding sealed into a connection's credential (credential-envelope.ts): its organization and id. */
export function credentialBinding(doc: Pick<SourceProviderDoc, "_id" | "organizationId">): string {
  return `${doc.organizationId}/${doc._id}`;
}

export async function createMongoSourceProviderRepository(db: Db): Promise<SourceProviderRepository> {
  const col: Collection<SourceProviderDoc> = db.collection("source_providers");
  await Promise.all([col.createIndex({ organizationId: 1, createdAt: 1 }), col.createIndex({ "credential.keyId": 1 })]);
  return {
    async insert(doc) {
      await col.insertOne(doc);
    },
    list: (organizationId) => col.find({ organizationId }).sort({ createdAt: 1, _id: 1 }).limit(1000).toArray(),
    count: (organizationId) => col.countDocuments({ organizationId }),
    get: (organizationId, id) => col.findOne({ _id: id, organizationId }),
    async remove(organizationId, id) {
      return (await col.deleteOne({ _id: id, organizationId })).deletedCount === 1;
    },
    sealedWithOtherKey: (keyId, limit) =>
      col
        .find({ "credential.keyId": { $ne: keyId } })
        .limit(limit)
        .toArray(),
    async replaceCredential(id, previousKeyId, credential) {
      const r = await col.updateOne({ _id: id, "credential.keyId": previousKeyId }, { $set: { credential } });
      return r.modifiedCount === 1;
    },
  };
}
