/**
 * Reading a forge's JSON payload by path, for the parsers: a missing or mistyped field a parser needs is a
 * PayloadProblem naming its path (`pull_request.head.sha must be a string`), which parseDelivery (parse-delivery.ts)
 * answers as the delivery's 4xx; optional fields read as their empty value.
 */
import type { WebhookPerson } from "./webhook-event.js";

/** A payload that lacks what its event must carry; its message names the field. */
export class PayloadProblem extends Error {
  override name = "PayloadProblem";
}

/** A JSON object with the path it was read at, for problems. */
export interface Node {
  path: string;
  value: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);

/** The payload's top level, which must be an object. */
export function root(payload: unknown): Node {
  if (!isObject(payload)) throw new PayloadProblem("the payload must be a JSON object");
  return { path: "", value: payload };
}

/** A required object member. */
export function object(node: Node, key: string): Node {
  const value = node.value[key];
  if (!isObject(value)) throw new PayloadProblem(`${join(node.path, key)} must be an object`);
  return { path: join(node.path, key), value };
}

/** An object member that may be absent or null (as may the object holding it). */
export function optionalObject(node: Node | null, key: string): Node | null {
  const value = node?.value[key];
  if (value === undefined || value === null || !node) return null;
  if (!isObject(value)) throw new PayloadProblem(`${join(node.path, key)} must be an object`);
  return { path: join(node.path, key), value };
}

/** A required string member, non-empty. */
export function string(node: Node, key: string): string {
  const value = node.value[key];
  if (typeof value !== "string" || value === "") throw new PayloadProblem(`${join(node.path, key)} must be a string`);
  return value;
}

/** A string member that may be absent or null ("" then); a number is read as its decimal text. */
export function optionalString(node: Node | null, key: string): string {
  const value = node?.value[key];
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  throw new PayloadProblem(`${join(node?.path ?? "", key)} must be a string`);
}

/** A required whole number member (a pull request number), as its decimal text. */
export function wholeNumber(node: Node, key: string): string {
  const value = node.value[key];
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return String(value);
  if (typeof value === "string" && /^\d{1,16}$/.test(value)) return value;
  throw new PayloadProblem(`${join(node.path, key)} must be a whole number`);
}

/** A boolean member; null when absent or null. */
export function optionalBoolean(node: Node | null, key: string): boolean | null {
  const value = node?.value[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== "boolean") throw new PayloadProblem(`${join(node?.path ?? "", key)} must be true or false`);
  return value;
}

/** An array member of objects; [] when absent or null. */
export function objects(node: Node, key: string): Node[] {
  const value = node.value[key];
  if (value === undefined || value === null) return [];
  const path = join(node.path, key);
  if (!Array.isArray(value)) throw new PayloadProblem(`${path} must be a list`);
  return value.map((item, i) => {
    if (!isObject(item)) throw new PayloadProblem(`${path}[${i}] must be an object`);
    return { path: `${path}[${i}]`, value: item };
  });
}

/** The names in a list of labels (`[{name}]`, or GitLab's `[{title}]`), skipping entries without one. */
export function labelNames(node: Node, key: string, nameKey = "name"): string[] {
  return objects(node, key)
    .map((label) => optionalString(label, nameKey))
    .filter((name) => name !== "");
}

/** A person from an object with name and email members (either may be absent); null when both are. */
export function person(node: Node | null, nameKeys: readonly string[] = ["name"]): WebhookPerson | null {
  if (!node) return null;
  const name = nameKeys.map((k) => optionalString(node, k)).find((n) => n !== "") ?? "";
  const email = optionalString(node, "email");
  return name === "" && email === "" ? null : { name, email };
}

/** A person from git's "Name <email>" form (Bitbucket's `author.raw`). */
export function rawPerson(raw: string): WebhookPerson | null {
  const match = /^\s*(.*?)\s*<([^<>]*)>\s*$/.exec(raw);
  if (match) return { name: match[1] ?? "", email: match[2] ?? "" };
  const name = raw.trim();
  return name === "" ? null : { name, email: "" };
}

/** A git ref's kind and short name: refs/heads/x is branch x, refs/tags/v1 is tag v1; anything else is null. */
export function refName(ref: string): { type: "branch" | "tag"; name: string } | null {
  if (ref.startsWith("refs/heads/") && ref.length > "refs/heads/".length)
    return { type: "branch", name: ref.slice("refs/heads/".length) };
  if (ref.startsWith("refs/tags/") && ref.length > "refs/tags/".length)
    return { type: "tag", name: ref.slice("refs/tags/".length) };
  return null;
}

/** Git's all-zero object name, which a push names as the new commit of a deleted ref. */
export function isZeroSha(sha: string): boolean {
  return /^0+$/.test(sha);
}
