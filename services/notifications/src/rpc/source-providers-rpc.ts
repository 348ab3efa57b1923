import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type SourceProvider,
  SourceProviderSchema,
  type SourceProvidersService,
} from "@conveyor/proto/source-providers";
import { invalidFields } from "@conveyor/runtime";
import type { SourceProviderDoc } from "../providers/source-provider-repository.js";
import type { SourceProviders } from "../providers/source-providers.js";

/** A connection as every answer shows it: never its credential (docs/statuses.md#connections). */
export function sourceProviderMessage(doc: SourceProviderDoc): SourceProvider {
  return create(SourceProviderSchema, {
    id: doc._id,
    organizationId: doc.organizationId,
    kind: doc.kind,
    apiUrl: doc.apiUrl,
    repositoryHost: doc.repositoryHost,
    credentialType: doc.credentialType,
    description: doc.description,
    createdAt: timestampFromDate(doc.createdAt),
    createdBy: doc.createdBy,
    appId: doc.appId ?? "",
  });
}

const required = (organizationId: string) => {
  if (organizationId === "") throw invalidFields([{ field: "organization_id", code: "can't be blank" }]);
};

/** The SourceProvidersService: add, list, read and remove an organization's connections. */
export function createSourceProvidersRpcs(providers: SourceProviders): ServiceImpl<typeof SourceProvidersService> {
  return {
    async createSourceProvider(req) {
      required(req.organizationId);
      const doc = await providers.create({
        organizationId: req.organizationId,
        kind: req.kind,
        apiUrl: req.apiUrl,
        token: req.token,
        description: req.description,
        createdBy: req.createdBy,
        appId: req.appId,
        privateKey: req.privateKey,
      });
      return { sourceProvider: sourceProviderMessage(doc) };
    },
    async listSourceProviders(req) {
      required(req.organizationId);
      return { sourceProviders: (await providers.list(req.organizationId)).map(sourceProviderMessage) };
    },
    async getSourceProvider(req) {
      required(req.organizationId);
      return { sourceProvider: sourceProviderMessage(await providers.get(req.organizationId, req.id)) };
    },
    async deleteSourceProvider(req) {
      required(req.organizationId);
      await providers.remove(req.organizationId, req.id);
      return {};
    },
  };
}
