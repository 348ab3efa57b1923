/** JSON schema fragments shared by response schemas: they make serialization fast and stop accidental disclosure. */
export const str = { type: "string" } as const;
export const nullableStr = { type: ["string", "null"] } as const;
export const int = { type: "integer" } as const;
export const bool = { type: "boolean" } as const;
export const timestamp = { type: "string" } as const;
export const nullableTimestamp = { type: ["string", "null"] } as const;

/** An object schema whose every listed property is required. */
export function object<P extends Record<string, unknown>>(properties: P) {
  return { type: "object", properties, required: Object.keys(properties) } as const;
}

/** An array of the given item schema. */
export function arrayOf<S>(items: S) {
  return { type: "array", items } as const;
}

/** The body of every error response. */
export const errorSchema = {
  type: "object",
  properties: {
    message: str,
    errors: arrayOf(object({ field: str, code: str })),
  },
  required: ["message"],
} as const;
