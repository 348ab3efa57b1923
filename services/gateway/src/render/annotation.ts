import type { Annotation } from "@conveyor/proto/annotations";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Int, NullableTimestamp, Str } from "./schemas.js";

/** The REST Annotation (Buildkite's annotations API; go-buildkite's Annotation): its body as sanitized HTML. */
export function renderAnnotation(a: Annotation): AnnotationBody {
  return {
    id: a.id,
    context: a.context,
    style: a.style,
    scope: a.scope,
    priority: a.priority,
    body_html: a.bodyHtml,
    created_at: isoTime(a.createdAt),
    updated_at: isoTime(a.updatedAt),
  };
}

/** The REST Annotation's response schema. */
export const AnnotationSchema = Type.Object({
  id: Str,
  context: Str,
  style: Str,
  scope: Str,
  priority: Int,
  body_html: Str,
  created_at: NullableTimestamp,
  updated_at: NullableTimestamp,
});
export type AnnotationBody = Static<typeof AnnotationSchema>;
