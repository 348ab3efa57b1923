import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./http-error.js";

export interface ErrorReply {
  status: number;
  body: Record<string, unknown>;
}

/** Fastify's own client errors (parsing, content type, size), mapped to the REST API's JSON bodies. */
const FASTIFY_CODES: Record<string, ErrorReply> = {
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    body: { message: "Problems parsing JSON: the request body is not valid JSON" },
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, body: { message: "Problems parsing JSON: the request body is empty" } },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    body: { message: "Unsupported Media Type: send the request body as JSON with Content-Type: application/json" },
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    body: { message: "Content-Length does not match the request body" },
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, body: { message: "Request body is too large" } },
};

/**
 * The one translation of errors into HTTP: HttpError as thrown, ConnectError by code (docs/compatibility.md#authentication-and-errors), Fastify
 * client errors by code, schema validation as 400 (query) or 422 (body); anything else is a 500 whose cause is
 * logged and never echoed.
 */
export function toErrorReply(err: unknown): ErrorReply {
  if (err instanceof HttpError) return { status: err.statusCode, body: err.body };
  if (err instanceof ConnectError) return connectErrorReply(err);
  const fe = err as Partial<FastifyError>;
  if (fe.code && FASTIFY_CODES[fe.code]) return FASTIFY_CODES[fe.code] as ErrorReply;
  if (fe.validation) {
    if (fe.validationContext === "body") {
      return { status: 422, body: { message: "Validation Failed", errors: bodyFieldErrors(fe.validation) } };
    }
    const first = fe.validation[0];
    const where = first?.instancePath.replace(/^\//, "") || fe.validationContext || "request";
    return {
      status: 400,
      body: {
        message: `Invalid ${fe.validationContext ?? "request"} parameter ${where}: ${first?.message ?? "is invalid"}`,
      },
    };
  }
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: { message: fe.message ?? "Bad Request" } };
  }
  return { status: 500, body: { message: "Internal Server Error" } };
}

type SchemaError = NonNullable<FastifyError["validation"]>[number];

/**
 * One error per field of a body that fails its schema: a field that fails every branch of a union (a nullable
 * string given a number) is named once, with its first branch's reason, and a map or object whose own entries
 * failed is named by those entries (`env.A`), not again as a whole.
 */
export function bodyFieldErrors(validation: readonly SchemaError[]): Array<{ field: string; code: string }> {
  const byField = new Map<string, string>();
  for (const v of validation) {
    const field = v.instancePath.replace(/^\//, "").replace(/\//g, ".") || String(v.params?.missingProperty ?? "body");
    const known = byField.get(field);
    if (known === undefined || (v.keyword !== "anyOf" && known === ANY_OF)) {
      byField.set(field, v.keyword === "anyOf" ? ANY_OF : (v.message ?? "is invalid"));
    }
  }
  const fields = [...byField.keys()];
  return fields
    .filter((field) => !fields.some((other) => other.startsWith(`${field}.`)))
    .map((field) => ({ field, code: byField.get(field) === ANY_OF ? "is invalid" : (byField.get(field) as string) }));
}
const ANY_OF = "\u0000anyOf";

function connectErrorReply(err: ConnectError): ErrorReply {
  switch (err.code) {
    case Code.NotFound:
      return { status: 404, body: { message: err.rawMessage || "Not Found" } };
    case Code.InvalidArgument:
    case Code.AlreadyExists: {
      const errors = fieldErrorsOf(err);
      return errors.length > 0
        ? { status: 422, body: { message: "Validation Failed", errors } }
        : { status: 422, body: { message: err.rawMessage } };
    }
    case Code.FailedPrecondition:
      return { status: 422, body: { message: err.rawMessage } };
    case Code.PermissionDenied:
      return { status: 403, body: { message: "Forbidden" } };
    case Code.Unauthenticated:
      return { status: 401, body: { message: "Authentication required" } };
    case Code.ResourceExhausted:
      return { status: 429, body: { message: "You have exceeded your API rate limit." } };
    // A backend call cut off mid-way (the server it reached went away) is as retryable as one that found none.
    case Code.Canceled:
    case Code.Unavailable:
      return { status: 503, body: { message: "Service Unavailable: please try again shortly" } };
    case Code.DeadlineExceeded:
      return { status: 504, body: { message: "Gateway Timeout: please try again shortly" } };
    default:
      return { status: 500, body: { message: "Internal Server Error" } };
  }
}

/** How unknown URLs a person's browser asks for are answered with a page instead of JSON (web/error-pages.ts). */
export interface NotFoundPage {
  wants(request: FastifyRequest): boolean;
  send(request: FastifyRequest, reply: FastifyReply): FastifyReply;
}

/** Installs the error and not-found handlers on the app; with `page`, a browser's unknown URL gets the 404 page. */
export function registerErrorHandling(app: FastifyInstance, page?: NotFoundPage): void {
  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toErrorReply(err);
    if (status >= 500) request.log.error({ err }, "request failed");
    else request.log.debug({ err: err instanceof Error ? err.message : err, status }, "client error");
    return reply.status(status).type("application/json; charset=utf-8").send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    if (page?.wants(request)) return page.send(request, reply);
    return reply.status(404).type("application/json; charset=utf-8").send({ message: "Not Found" });
  });
}
