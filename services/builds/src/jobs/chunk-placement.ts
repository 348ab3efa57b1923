import type { ChunkSpan } from "../store/job-log-repository.js";

/** Where a chunk goes, as decided from the one stored chunk that could be in its way. */
export type ChunkPlacement =
  /** Nothing is stored where it goes: store it. */
  | { kind: "new" }
  /** The same chunk is stored already (a retried upload): nothing to store. */
  | { kind: "stored" }
  /** Another chunk holds some of its bytes: refuse it. */
  | { kind: "refused"; reason: string };

/**
 * The end of the range to look below for the chunk in the way (exclusive): the chunk's end, or just past its offset for
 * an empty chunk, so that a chunk stored at its very offset is found either way.
 */
export const placementEnd = (chunk: { offset: number; size: number }) => chunk.offset + Math.max(chunk.size, 1);

/**
 * Places a chunk against `nearest`, the stored chunk with the greatest offset below `placementEnd(chunk)` (null when
 * there is none). Chunks never overlap (append refuses them), so that one chunk is the only one that can: one at the
 * chunk's own offset (the same chunk again, or another), one starting inside it, or one before it that reaches into
 * it. Any stored chunk starting inside it would be at or below that one, and any before it ends at or before it.
 */
export function placeChunk(chunk: ChunkSpan, nearest: ChunkSpan | null): ChunkPlacement {
  if (!nearest) return { kind: "new" };
  if (nearest.offset === chunk.offset) {
    // Chunks stored before their hash was recorded are told apart by size alone.
    if (nearest.size === chunk.size && (nearest.sha256 === "" || nearest.sha256 === chunk.sha256))
      return { kind: "stored" };
    return { kind: "refused", reason: `Another chunk is already stored at offset ${chunk.offset}` };
  }
  if (nearest.offset > chunk.offset || nearest.offset + nearest.size > chunk.offset)
    return { kind: "refused", reason: `The chunk at offset ${chunk.offset} overlaps a chunk already stored` };
  return { kind: "new" };
}
