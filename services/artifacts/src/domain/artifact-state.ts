/** The states of an artifact (docs/compatibility.md#artifacts). */
export const ARTIFACT_STATES = ["new", "error", "finished", "deleted", "expired"] as const;
export type ArtifactState = (typeof ARTIFACT_STATES)[number];

/** What moves an artifact from one state to another. */
export type ArtifactEvent =
  | "upload_finished" // the agent reports the upload done (and the object is there)
  | "upload_failed" // the agent reports an error, or the object is missing or of another size
  | "abandoned" // a sweep finds it new long after its upload form expired
  | "deleted" // a REST client deletes it
  | "expired"; // a sweep finds it older than its organization's retention

/** The states each event may leave from, and where it leads. */
const TRANSITIONS: Record<ArtifactEvent, { from: readonly ArtifactState[]; to: ArtifactState }> = {
  upload_finished: { from: ["new"], to: "finished" },
  upload_failed: { from: ["new"], to: "error" },
  abandoned: { from: ["new"], to: "error" },
  deleted: { from: ["new", "error", "finished", "expired"], to: "deleted" },
  expired: { from: ["finished", "error"], to: "expired" },
};

/** The states an event applies to, and its target state. */
export function transition(event: ArtifactEvent): { from: readonly ArtifactState[]; to: ArtifactState } {
  return TRANSITIONS[event];
}

/** The state after an event, or undefined when the event does not apply in `from`. */
export function nextState(from: ArtifactState, event: ArtifactEvent): ArtifactState | undefined {
  const t = TRANSITIONS[event];
  return t.from.includes(from) ? t.to : undefined;
}

/** States whose object should no longer be in the store. */
export const OBJECTLESS_STATES: readonly ArtifactState[] = ["error", "deleted", "expired"];

/**
 * Why the object the store holds is not a finished artifact's upload, or null when it is: it must exist, have the
 * size announced and, when the record kept it, the checksum (ETag) it had when the upload finished.
 */
export function objectProblem(
  record: { fileSize: number; etag?: string },
  object: { size: number; etag: string } | undefined,
): string | null {
  if (!object) return "is missing";
  if (object.size !== record.fileSize) return `is ${object.size} bytes where ${record.fileSize} were uploaded`;
  if (record.etag !== undefined && object.etag !== record.etag) return "was changed after its upload finished";
  return null;
}
