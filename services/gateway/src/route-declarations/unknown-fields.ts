import type { preValidationAsyncHookHandler } from "fastify";
import { HttpError } from "../errors/http-error.js";

/**
 * A body field a route does not take is refused with Buildkite's 422 naming it, never ignored
 * (docs/compatibility.md#authentication-and-errors). A route declares it as its preValidation hook with the
 * fields it takes.
 */
export function refuseUnknownFields(body: unknown, known: readonly string[]): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return;
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length === 0) return;
  throw new HttpError(422, "Validation Failed", {
    message: "Validation Failed",
    errors: unknown.slice(0, 20).map((field) => ({ field, code: "is not taken" })),
  });
}

/** The preValidation hook of a route taking only `known` fields in its body. */
export const onlyFields =
  (known: readonly string[]): preValidationAsyncHookHandler =>
  async (request) =>
    refuseUnknownFields(request.body, known);
