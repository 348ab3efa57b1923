import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import type { FastifyReply, FastifyRequest } from "fastify";
import { toErrorReply } from "../../errors/error-handler.js";
import type { BuildParams } from "../pages/build-data.js";
import { sendBuildPage } from "../pages/build-page.js";
import type { UnblockAttempt } from "../pages/build-unblock-form.js";
import type { WebDeps } from "../web-deps.js";

/** The builds service's refusals a person can act on: shown on the build's page, beside what they tried. */
const SHOWN_ON_PAGE = new Set([Code.FailedPrecondition, Code.InvalidArgument, Code.AlreadyExists]);

/**
 * Answers an action of a build's page (docs/pages.md#actions): done, a 303 to the changed page (`done` says where);
 * refused by the builds service for the build's state or the values given, the build's page with the reason, under
 * the status REST gives the same refusal (422). Access refusals (403, 404) and failures are the error pages, as
 * REST answers them. `unblock` names the values to show again when an unblock's values were refused.
 */
export async function answerAction(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: WebDeps,
  params: BuildParams,
  act: () => Promise<string>,
  unblock?: Omit<UnblockAttempt, "errors">,
): Promise<FastifyReply> {
  let to: string;
  try {
    to = await act();
  } catch (err) {
    if (!(err instanceof ConnectError) || !SHOWN_ON_PAGE.has(err.code)) throw err;
    const { status } = toErrorReply(err);
    const errors = fieldErrorsOf(err);
    const notice = {
      status,
      error: errors.length > 0 ? "Some values were not accepted." : err.rawMessage,
      ...(unblock ? { unblock: { ...unblock, errors } } : {}),
    };
    request.log.debug({ err: err.rawMessage, status }, "action refused");
    return sendBuildPage(request, reply, deps, params, {}, notice);
  }
  return reply.redirect(to, 303);
}
