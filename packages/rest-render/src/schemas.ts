import { type Static, type TSchema, Type } from "@sinclair/typebox";

/**
 * Schema pieces shared by the REST answers, in TypeBox: one declaration gives the response schema (fast
 * serialization, nothing undeclared leaks), the OpenAPI document and the TypeScript type.
 */
export const Str = Type.String();
export const Int = Type.Integer();
export const Bool = Type.Boolean();
/** An ISO 8601 time with milliseconds and `Z` (docs/compatibility.md#timestamps). */
export const Timestamp = Type.String({ description: "ISO 8601 time, e.g. 2026-01-02T03:04:05.678Z" });

/** The schema, or null: one JSON Schema `type` list, as fast-json-stringify serializes it best. */
export function Nullable<T extends TSchema>(schema: T) {
  const type = (schema as { type?: string | string[] }).type;
  if (typeof type !== "string") return Type.Union([schema, Type.Null()]);
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, "null"] });
}

export const NullableStr = Nullable(Str);
export const NullableInt = Nullable(Int);
export const NullableTimestamp = Nullable(Timestamp);
/** An object of string → string (env, meta_data). */
export const StringMap = Type.Record(Type.String(), Type.String());

/** The body of every error answer (docs/compatibility.md#authentication-and-errors; a 429 also says which limit and when it resets, #rate-limits). */
export const ErrorBody = Type.Object(
  {
    message: Str,
    errors: Type.Optional(Type.Array(Type.Object({ field: Str, code: Str }))),
    scope: Type.Optional(Str),
    limit: Type.Optional(Int),
    current: Type.Optional(Int),
    reset: Type.Optional(Int),
  },
  { title: "Error" },
);
