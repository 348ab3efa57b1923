import { createEnvReader, type Env } from "@conveyor/runtime";
import { PASSWORD_COST } from "./domain/password.js";
import { DEFAULT_SESSION_LIFETIME } from "./domain/session-lifetime.js";
import { DEFAULT_SIGN_IN_LIMITS } from "./domain/sign-in-limits.js";
import type { SignInSettings } from "./rpc/sign-in-context.js";

/** The identity service's own settings, beyond the common backend ones. */
export interface IdentityConfig {
  /** Sessions of the pages and failed sign-ins (docs/pages.md#signing-in). */
  readonly signIn: SignInSettings;
}

const DAY_MS = 24 * 60 * 60_000;
const MINUTE_MS = 60_000;

/**
 * Parses SESSION_IDLE_DAYS, SESSION_MAX_DAYS, SIGN_IN_ACCOUNT_FAILURES, SIGN_IN_ADDRESS_FAILURES and
 * SIGN_IN_WINDOW_MINUTES once.
 */
export function readIdentityConfig(env: Env): IdentityConfig {
  const r = createEnvReader(env);
  const lifetime = DEFAULT_SESSION_LIFETIME;
  const limits = DEFAULT_SIGN_IN_LIMITS;
  const maxDays = r.int("SESSION_MAX_DAYS", lifetime.maxMs / DAY_MS, { min: 1, max: 365 });
  // An idle time longer than the maximum would never apply: it is cut to the maximum.
  const idleDays = Math.min(r.int("SESSION_IDLE_DAYS", lifetime.idleMs / DAY_MS, { min: 1, max: 365 }), maxDays);
  return Object.freeze({
    signIn: Object.freeze({
      lifetime: Object.freeze({ idleMs: idleDays * DAY_MS, maxMs: maxDays * DAY_MS, refreshMs: lifetime.refreshMs }),
      limits: Object.freeze({
        accountFailures: r.int("SIGN_IN_ACCOUNT_FAILURES", limits.accountFailures, { min: 1, max: 1000 }),
        addressFailures: r.int("SIGN_IN_ADDRESS_FAILURES", limits.addressFailures, { min: 1, max: 100_000 }),
        windowMs: r.int("SIGN_IN_WINDOW_MINUTES", limits.windowMs / MINUTE_MS, { min: 1, max: 24 * 60 }) * MINUTE_MS,
      }),
      passwordCost: PASSWORD_COST,
    }),
  });
}
