import { ArtifactsService } from "@conveyor/proto/artifacts";
import { runService } from "@conveyor/runtime";
import { createMongoArtifactsRepository } from "./artifacts-repository.js";
import { createArtifactsService } from "./artifacts-service.js";
import { readS3Config } from "./config.js";
import { createS3ObjectStore } from "./object-store.js";

void runService(
  {
    name: "artifacts",
    serviceNames: [ArtifactsService.typeName],
    async setup({ db, env, logger }) {
      const store = createS3ObjectStore(readS3Config(env));
      await store.ensureBucket();
      logger.info({ bucket: store.bucket }, "S3 bucket ready");
      const service = createArtifactsService({ repo: await createMongoArtifactsRepository(db) });
      return (router) => router.service(ArtifactsService, service);
    },
  },
  process.env,
);
