import { ArtifactsService } from "@conveyor/proto/artifacts";
import { repeat, runService } from "@conveyor/runtime";
import type { ArtifactsContext } from "./artifacts-context.js";
import { createArtifactsService } from "./artifacts-service.js";
import { readArtifactsConfig } from "./config.js";
import { createS3ObjectStore } from "./object-store/object-store.js";
import { createMongoArtifactRepository } from "./store/artifact-repository.js";
import { createSweeper } from "./sweep/sweeper.js";

void runService(
  {
    name: "artifacts",
    serviceNames: [ArtifactsService.typeName],
    async setup({ db, env, logger }) {
      const { s3, ...config } = readArtifactsConfig(env);
      const store = createS3ObjectStore(s3);
      await store.ensureBucket();
      logger.info({ bucket: store.bucket }, "S3 bucket ready");
      const ctx: ArtifactsContext = {
        repo: await createMongoArtifactRepository(db),
        store,
        config,
        now: () => new Date(),
        logger,
      };
      const sweeper = createSweeper(ctx);
      repeat(
        async () => {
          const r = await sweeper.sweep();
          if (r.abandoned + r.expired + r.removed > 0) logger.info(r, "artifacts swept");
        },
        { what: "artifacts sweep", everyMs: config.sweepIntervalMs, logger },
      );
      return (router) => router.service(ArtifactsService, createArtifactsService(ctx));
    },
  },
  process.env,
);
