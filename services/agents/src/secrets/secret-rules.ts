/**
 * The bounds of a cluster secret (docs/limits.md#cluster-secrets), as Buildkite's secrets API states them: a key
 * starts with a letter and holds letters, digits and underscores, at most 255 characters, not starting with
 * `buildkite` or `bk` in any case, unique in its cluster regardless of case (the agent's `secret get` treats keys
 * as case-insensitive); a value is not blank and at most 8 KiB of UTF-8. Pure functions.
 */

/** The longest key. */
export const MAX_SECRET_KEY_LENGTH = 255;
/** The largest value, in bytes of UTF-8. */
export const MAX_SECRET_VALUE_BYTES = 8 * 1024;
/** The longest description. */
export const MAX_SECRET_DESCRIPTION_LENGTH = 1000;
/** The most secrets one cluster holds. */
export const MAX_SECRETS_PER_CLUSTER = 100;

const KEY_SHAPE = /^[A-Za-z][A-Za-z0-9_]*$/;

/** Why `key` cannot name a secret, or undefined when it can. */
export function secretKeyProblem(key: string): string | undefined {
  if (key === "") return "can't be blank";
  if (key.length > MAX_SECRET_KEY_LENGTH) return `is too long (maximum is ${MAX_SECRET_KEY_LENGTH} characters)`;
  if (!KEY_SHAPE.test(key)) return "must start with a letter and contain only letters, numbers and underscores";
  const lower = key.toLowerCase();
  if (lower.startsWith("buildkite") || lower.startsWith("bk")) return "cannot start with buildkite or bk";
  return undefined;
}

/** Why `value` cannot be a secret's value, or undefined when it can. */
export function secretValueProblem(value: string): string | undefined {
  if (value.trim() === "") return "can't be blank";
  if (Buffer.byteLength(value, "utf8") > MAX_SECRET_VALUE_BYTES)
    return `is too large (maximum is ${MAX_SECRET_VALUE_BYTES} bytes)`;
  return undefined;
}

/** Why `description` cannot describe a secret, or undefined when it can. */
export function secretDescriptionProblem(description: string): string | undefined {
  return description.length > MAX_SECRET_DESCRIPTION_LENGTH
    ? `is too long (maximum is ${MAX_SECRET_DESCRIPTION_LENGTH} characters)`
    : undefined;
}

/** The form a key is unique in and looked up by: keys differ in more than case. */
export const keyIdentity = (key: string): string => key.toLowerCase();
