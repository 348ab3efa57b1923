import http from "node:http";
import AjvModule from "ajv";
import type { FuzzRequest, Operation, RawRequest } from "./operations.js";
import type { JsonSchema } from "./schema-arbitrary.js";

// Ajv's CommonJS export is the class itself, its ES form the module's default.
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as typeof AjvModule.default;
const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: false });
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

export interface RawResponse {
  status: number;
  contentType: string;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** Sends a request as it is, byte for byte (fetch would normalize `..` and re-encode the path). */
export async function sendRaw(baseUrl: string, token: string, req: RawRequest): Promise<RawResponse> {
  try {
    return await sendOnce(baseUrl, token, req, agent);
  } catch {
    // A kept-alive connection the server had just closed: once more on a new one (a second failure is reported).
    return await sendOnce(baseUrl, token, req, false);
  }
}

function sendOnce(baseUrl: string, token: string, req: RawRequest, via: http.Agent | false): Promise<RawResponse> {
  const base = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const authorization = req.authorization === undefined ? `Bearer ${token}` : req.authorization;
    const headers: Record<string, string> = { ...req.headers, ...(authorization === null ? {} : { authorization }) };
    if (req.contentType) headers["content-type"] = req.contentType;
    if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
    const r = http.request(
      { host: base.hostname, port: base.port, method: req.method, path: req.url, headers, agent: via, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    r.on("timeout", () => r.destroy(new Error("request timed out after 30 s")));
    r.on("error", reject);
    if (req.body !== undefined) r.write(req.body);
    r.end();
  });
}

/** The documented answer for a status: the exact code, else its class (`4XX`), else `default`. */
function documented(op: Operation, status: number) {
  const r = op.responses;
  const key = [String(status), `${String(status)[0]}XX`, `${String(status)[0]}xx`, "default"].find((k) => r[k]);
  const response = key ? r[key] : undefined;
  return key && response ? { key, response } : undefined;
}

/**
 * What is wrong with an answer, or undefined: a 5xx (or no answer), a status the operation does not document, or a
 * body that does not match the documented schema for its status.
 */
export function problemWith(req: FuzzRequest, res: RawResponse): string | undefined {
  if (res.status >= 500 || res.status < 100) return `status ${res.status}: ${res.text.slice(0, 300)}`;
  const doc = documented(req.op, res.status);
  if (!doc) return `undocumented status ${res.status}: ${res.text.slice(0, 300)}`;
  const content = doc.response.content ?? {};
  const json = content["application/json"]?.schema;
  if (!json) return undefined; // 204, text/plain: no JSON body to check.
  if (res.text === "" && (res.status === 204 || (res.status >= 300 && res.status < 400))) return undefined;
  if (!res.contentType.startsWith("application/json")) {
    return `status ${res.status} answered ${res.contentType || "no content type"}, not JSON: ${res.text.slice(0, 200)}`;
  }
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    return `status ${res.status} body is not JSON: ${res.text.slice(0, 200)}`;
  }
  const cacheKey = `${req.op.id} ${doc.key}`;
  let validate = validators.get(cacheKey);
  if (!validate) {
    validate = ajv.compile(json as JsonSchema);
    validators.set(cacheKey, validate);
  }
  if (!validate(body)) {
    const e = validate.errors?.[0];
    return `status ${res.status} body does not match its schema (${doc.key}): ${e?.instancePath || "/"} ${e?.message}: ${res.text.slice(0, 200)}`;
  }
  return undefined;
}

/** How a request reads in a report: method, URL (shortened) and body (shortened). */
export function describe(req: FuzzRequest): string {
  const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);
  const shown = Buffer.isBuffer(req.body) ? `<${req.body.length} bytes>` : JSON.stringify(req.body);
  const body = req.body === undefined ? "" : ` ${req.contentType ?? "(no content type)"} ${cut(shown, 300)}`;
  const auth =
    req.authorization === undefined
      ? ""
      : ` auth=${req.authorization === null ? "none" : `${req.authorization.split(" ")[0]} …`}`;
  return `${req.method} ${cut(req.url, 200)}${body}${auth} [${req.mutations.join(",") || "valid"}]`;
}
