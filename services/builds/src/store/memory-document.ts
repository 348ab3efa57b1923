/**
 * What the in-memory repositories keep and hand out: a copy of a document as the MongoDB driver would store it and
 * read it back, so that a fake never shares an object with its caller and answers with the same values.
 */

/**
 * A deep copy of `value` as MongoDB stores it: `undefined` becomes null (the driver serializes it so unless
 * `ignoreUndefined` is set, which the services do not set), dates and bytes are copied, other objects are copied
 * field by field.
 */
export function asStored<T>(value: T): T {
  return copy(value) as T;
}

function copy(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return new Date(value.getTime());
  if (value instanceof Uint8Array) return value.slice();
  if (Array.isArray(value)) return value.map(copy);
  if (typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, copy(field)]));
  }
  return value;
}
