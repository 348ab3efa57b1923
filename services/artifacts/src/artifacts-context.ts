import type { Logger } from "@conveyor/runtime";
import type { ArtifactsConfig } from "./config.js";
import type { ObjectStore } from "./object-store/object-store.js";
import type { ArtifactRepository } from "./store/artifact-repository.js";

/** What the artifacts service's parts share. */
export interface ArtifactsContext {
  repo: ArtifactRepository;
  store: ObjectStore;
  config: Omit<ArtifactsConfig, "s3">;
  now: () => Date;
  /** Where the failures the service works around (an object removal the sweep retries, say) are told. */
  logger: Pick<Logger, "warn" | "info">;
}
