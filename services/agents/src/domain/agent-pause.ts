/**
 * Pausing an agent (Buildkite's "Pause and resume an agent"): a paused agent stays connected and takes no job until
 * it is resumed or its pause times out, by default after 5 minutes and at most after 7 days. Pure.
 */

export const PAUSE_LIMITS = {
  defaultTimeoutMinutes: 5,
  maxTimeoutMinutes: 10_080,
  maxNoteLength: 1000,
} as const;

/** What of an agent its pause depends on. */
export interface PauseState {
  paused: boolean;
  pausedAt: Date | null;
  /** Null for a pause with no end (none is made any more, but stored agents may carry one). */
  pausedTimeoutInMinutes?: number | null;
}

/** Why a pause request cannot be taken, or null. */
export function pauseRequestProblem(note: string, timeoutInMinutes: number | undefined): string | null {
  if ([...note].length > PAUSE_LIMITS.maxNoteLength)
    return `Note is too long (maximum is ${PAUSE_LIMITS.maxNoteLength} characters)`;
  if (
    timeoutInMinutes !== undefined &&
    (!Number.isInteger(timeoutInMinutes) || timeoutInMinutes < 1 || timeoutInMinutes > PAUSE_LIMITS.maxTimeoutMinutes)
  )
    return `Timeout in minutes must be a whole number from 1 to ${PAUSE_LIMITS.maxTimeoutMinutes}`;
  return null;
}

/** When a pause ends by itself; null when the agent is not paused or its pause has no end. */
export function pauseEndsAt(agent: PauseState): Date | null {
  const minutes = agent.pausedTimeoutInMinutes ?? null;
  if (!agent.paused || !agent.pausedAt || minutes === null) return null;
  return new Date(agent.pausedAt.getTime() + minutes * 60_000);
}

/** Whether the agent is paused right now: paused, and its pause has not timed out. */
export function isPaused(agent: PauseState, now: Date): boolean {
  const ends = pauseEndsAt(agent);
  return agent.paused && (ends === null || ends > now);
}
