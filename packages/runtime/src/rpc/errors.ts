import { Code, ConnectError } from "@connectrpc/connect";
import { type FieldError, ValidationErrorsSchema } from "@conveyor/proto/common";

/** NotFound for a thing named as the REST API names it, for example "organization" → "No organization found". */
export function notFound(thing: string, cause?: unknown): ConnectError {
  return new ConnectError(`No ${thing} found`, Code.NotFound, undefined, undefined, cause);
}

/** InvalidArgument carrying field errors, rendered as 422 Validation Failed by the gateway. */
export function invalidFields(errors: Array<Pick<FieldError, "field" | "code">>): ConnectError {
  const message = errors.map((e) => `${e.field} ${e.code}`).join("; ");
  return new ConnectError(message || "Validation Failed", Code.InvalidArgument, undefined, [
    { desc: ValidationErrorsSchema, value: { errors } },
  ]);
}

/** AlreadyExists for one field, rendered as 422 Validation Failed by the gateway. */
export function alreadyExists(field: string, code = "has already been taken", cause?: unknown): ConnectError {
  return new ConnectError(
    `${field} ${code}`,
    Code.AlreadyExists,
    undefined,
    [{ desc: ValidationErrorsSchema, value: { errors: [{ field, code }] } }],
    cause,
  );
}

/** FailedPrecondition with a reason a person can act on, rendered as 422 {message}. */
export function failedPrecondition(reason: string): ConnectError {
  return new ConnectError(reason, Code.FailedPrecondition);
}

/** PermissionDenied: the caller may not do this (rendered as 403 Forbidden by the gateway). */
export function permissionDenied(reason = "Forbidden"): ConnectError {
  return new ConnectError(reason, Code.PermissionDenied);
}

/** The field errors attached to a ConnectError, if any. */
export function fieldErrorsOf(err: ConnectError): Array<{ field: string; code: string }> {
  return err.findDetails(ValidationErrorsSchema).flatMap((d) => d.errors.map(({ field, code }) => ({ field, code })));
}

/**
 * A ConnectError's field errors in one sentence for people ("steps.0.command is required; …"), the first `max` of
 * them and how many more; its message when it has none.
 */
export function describeFieldErrors(err: ConnectError, max = 10): string {
  const errors = fieldErrorsOf(err);
  const listed = errors.slice(0, max).map((e) => `${e.field} ${e.code}`);
  if (errors.length > max) listed.push(`and ${errors.length - max} more`);
  return listed.join("; ") || err.rawMessage;
}
