/**
 * POST /webhooks/deliver/{token}: where forges deliver a pipeline's webhooks (render/urls.ts names it as the
 * pipeline's `provider.webhook_url`; docs/webhooks.md). Public: the URL's token is the credential, and with a
 * webhook secret the delivery's signature too. The route recognises the forge by its headers, finds the pipeline by
 * the token, checks the signature on the raw body, and hands the delivery to the builds service, which records it
 * before this answers (a 2xx means the delivery will not be lost). Every other outcome is a 4xx saying what was
 * wrong, and creates nothing.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type HeaderBag, header, recogniseDelivery } from "@conveyor/ci-rules";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { HttpError } from "../errors/http-error.js";
import type { Urls } from "../render/urls.js";
import { responses, typed } from "../route-declarations/declare.js";
import { WebhookAnswerSchema, webhookAnswer } from "./webhook-answer.js";
import { safeEqual, signatureProblem } from "./webhook-signatures.js";

/** The largest delivery taken: GitHub's pushes list at most 20 commits; a larger body is no forge's delivery. */
export const WEBHOOK_BODY_LIMIT = 5 * 1024 * 1024;

/** The longest token looked up: the pipelines service makes 48 characters. */
const MAX_TOKEN = 200;

/** The answer to a token no pipeline has. */
const NO_PIPELINE = () =>
  new HttpError(
    404,
    "No pipeline has this webhook URL: copy the pipeline's provider.webhook_url again (a deleted pipeline's URL stops working).",
  );

/** What the webhook route needs. */
export interface WebhookDeps {
  clients: Pick<GatewayClients, "pipelines" | "builds" | "identity">;
  urls: Urls;
}

/** Registers the webhook receiver in its own scope, which takes bodies as raw bytes (signatures cover them). */
export async function registerWebhooks(app: FastifyInstance, deps: WebhookDeps): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    webhookRoute(scope, deps);
  });
}

function webhookRoute(scope: FastifyInstance, deps: WebhookDeps): void {
  const { clients } = deps;

  /** The pipeline whose webhook URL carries `token`, or null. */
  const pipelineOf = async (token: string): Promise<Pipeline | null> => {
    try {
      const { pipeline } = await clients.pipelines.getPipelineByWebhookToken({ webhookToken: token });
      // The lookup was by the token's hash; the token itself is compared too, in constant time.
      return pipeline && safeEqual(pipeline.provider?.webhookToken ?? "", token) ? pipeline : null;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return null;
      throw err;
    }
  };

  typed(scope).post(
    "/webhooks/deliver/:token",
    {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      schema: {
        params: Type.Object({ token: Type.String() }),
        response: { ...responses(200, WebhookAnswerSchema), 202: WebhookAnswerSchema },
      },
    },
    async (request, reply) => {
      const headers = request.headers as HeaderBag;
      const recognised = recogniseDelivery(headers);
      if ("problem" in recognised) throw new HttpError(400, recognised.problem);
      const { token } = request.params;
      const pipeline = token.length <= MAX_TOKEN ? await pipelineOf(token) : null;
      if (!pipeline) throw NO_PIPELINE();
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const problem = signatureProblem(recognised.forge, headers, body, pipeline.provider?.webhookSecret ?? "");
      if (problem) throw new HttpError(401, problem);
      const { organization } = await clients.identity.getOrganization({ id: pipeline.organizationId });
      const orgSlug = organization?.slug ?? "";
      const res = await clients.builds.receiveWebhook({
        pipeline,
        organizationSlug: orgSlug,
        forge: recognised.forge,
        event: recognised.event,
        deliveryId: recognised.deliveryId,
        payload: jsonPayload(header(headers, "content-type"), body),
      });
      return reply
        .status(res.pending ? 202 : 200)
        .send(webhookAnswer(res, { urls: deps.urls, orgSlug, pipelineSlug: pipeline.slug }));
    },
  );
}

/**
 * The delivery's JSON: the body itself, or, for GitHub's form-encoded webhooks, its `payload` field. Any other
 * content type is a 415 saying what to choose.
 */
function jsonPayload(contentType: string, body: Buffer): Uint8Array {
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json" || type === "") return body;
  if (type === "application/x-www-form-urlencoded") {
    const payload = new URLSearchParams(body.toString("utf8")).get("payload");
    if (payload === null) throw new HttpError(400, "A form-encoded delivery must carry its JSON in a payload field.");
    return Buffer.from(payload, "utf8");
  }
  throw new HttpError(415, "Send webhook deliveries as application/json (the webhook's Content type setting).");
}
