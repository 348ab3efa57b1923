import type { Logger } from "@conveyor/runtime";
import type { ArtifactRepository } from "./artifact-repository.js";
import type { ArtifactsConfig } from "./config.js";
import type { ObjectStore } from "./object-store.js";

/** What the artifacts service's parts share. */
export interface ArtifactsContext {
  repo: ArtifactRepository;
  store: ObjectStore;
  config: Omit<ArtifactsConfig, "s3">;
  now: () => Date;
  logger?: Pick<Logger, "warn" | "info">;
}
