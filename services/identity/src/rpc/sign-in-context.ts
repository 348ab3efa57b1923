/**
 * What the sign-in RPCs share (passwords, sign-in links, sessions; docs/pages.md#signing-in): their repositories and
 * settings, starting a session, ending sessions with the event every gateway hears, and the occasional removal of
 * what has expired.
 */

import { SessionEndedSchema } from "@conveyor/proto/identity";
import { type EventPublisher, hashSecret, newId, newSecret, SUBJECTS } from "@conveyor/runtime";
import { PASSWORD_COST, type ScryptCost } from "../domain/password.js";
import { DEFAULT_SESSION_LIFETIME, newSessionTimes, type SessionLifetime } from "../domain/session-lifetime.js";
import { DEFAULT_SIGN_IN_LIMITS, type SignInLimits } from "../domain/sign-in-limits.js";
import type { IdentityRepository } from "../store/identity-repository.js";
import type { PasswordRepository } from "../store/password-repository.js";
import type { SessionDoc, SessionRepository } from "../store/session-repository.js";
import type { SignInFailureRepository } from "../store/sign-in-failure-repository.js";
import { sessionMessage } from "./identity-message.js";

/** Prefix of session secrets (the pages' cookie). */
export const SESSION_SECRET_PREFIX = "cvs_";

/** Prefix of one-time sign-in link secrets. */
export const SIGN_IN_LINK_PREFIX = "cvl_";

/** How long sessions live, how many failures are allowed, and the cost of new password hashes. */
export interface SignInSettings {
  lifetime: SessionLifetime;
  limits: SignInLimits;
  passwordCost: ScryptCost;
}

/** The defaults of docs/configuration.md. */
export const DEFAULT_SIGN_IN_SETTINGS: SignInSettings = Object.freeze({
  lifetime: DEFAULT_SESSION_LIFETIME,
  limits: DEFAULT_SIGN_IN_LIMITS,
  passwordCost: PASSWORD_COST,
});

/** What the sign-in RPCs are made of. */
export interface SignInContextDeps {
  repo: IdentityRepository;
  sessions: SessionRepository;
  passwords: PasswordRepository;
  failures: SignInFailureRepository;
  events: EventPublisher;
  now: () => Date;
  settings: SignInSettings;
}

/** The sign-in RPCs' dependencies and the operations they share. */
export interface SignInContext extends SignInContextDeps {
  /** Starts a session of a user: the stored session as a message, and its secret (shown once). */
  startSession(userId: string): Promise<{ session: ReturnType<typeof sessionMessage>; secret: string }>;
  /** Ends every session of a user and announces it; returns how many there were. */
  endUserSessions(userId: string): Promise<number>;
  /** Announces that one session ended. */
  announceEnded(session: Pick<SessionDoc, "_id" | "userId">): Promise<void>;
  /** Deletes expired sessions, links and failure counts, at most once a minute per process. */
  sweep(): Promise<void>;
}

const SWEEP_INTERVAL_MS = 60_000;

/** The sign-in context over its dependencies. */
export function createSignInContext(deps: SignInContextDeps): SignInContext {
  const { sessions, failures, events, now, settings } = deps;
  let lastSweep = Number.NEGATIVE_INFINITY;
  return {
    ...deps,
    async startSession(userId) {
      const secret = newSecret(SESSION_SECRET_PREFIX);
      const session: SessionDoc = {
        _id: newId(),
        hash: hashSecret(secret),
        userId,
        ...newSessionTimes(now(), settings.lifetime),
      };
      await sessions.insertSession(session);
      return { session: sessionMessage(session), secret };
    },
    async endUserSessions(userId) {
      const ended = await sessions.deleteUserSessions(userId);
      // Announced even when none was found: a gateway may still hold one that a concurrent sign-out deleted.
      await events.publish(SUBJECTS.identity.sessionEnded, SessionEndedSchema, { userId, sessionId: "" });
      return ended;
    },
    async announceEnded(session) {
      await events.publish(SUBJECTS.identity.sessionEnded, SessionEndedSchema, {
        userId: session.userId,
        sessionId: session._id,
      });
    },
    async sweep() {
      const at = now();
      if (at.getTime() - lastSweep < SWEEP_INTERVAL_MS) return;
      lastSweep = at.getTime();
      await Promise.all([sessions.deleteExpired(at), failures.deleteEnded(at)]);
    },
  };
}
