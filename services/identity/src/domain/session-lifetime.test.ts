import {
  DEFAULT_LINK_VALIDITY_S,
  DEFAULT_SESSION_LIFETIME,
  linkValidity,
  newSessionTimes,
  sessionExpired,
  sessionRefresh,
} from "./session-lifetime.js";

const DAY = 24 * 3600_000;
const t0 = new Date("2026-03-01T00:00:00Z");
const at = (ms: number) => new Date(t0.getTime() + ms);
const lifetime = DEFAULT_SESSION_LIFETIME;

describe("session lifetime", () => {
  it("ends a session left unused for the idle time, and one used steadily at its maximum", () => {
    expect(lifetime).toMatchObject({ idleMs: 14 * DAY, maxMs: 30 * DAY });
    const s = newSessionTimes(t0, lifetime);
    expect(s).toEqual({ createdAt: t0, lastSeenAt: t0, idleExpiresAt: at(14 * DAY), expiresAt: at(30 * DAY) });
    expect(sessionExpired(s, at(14 * DAY - 1))).toBe(false);
    expect(sessionExpired(s, at(14 * DAY))).toBe(true);

    // Used after ten days: the idle end moves on; after twenty, it stops at the maximum.
    let times = { ...s, ...sessionRefresh(s, at(10 * DAY), lifetime) };
    expect(times).toMatchObject({ lastSeenAt: at(10 * DAY), idleExpiresAt: at(24 * DAY) });
    expect(sessionExpired(times, at(20 * DAY))).toBe(false);
    times = { ...times, ...sessionRefresh(times, at(20 * DAY), lifetime) };
    expect(times).toMatchObject({ lastSeenAt: at(20 * DAY), idleExpiresAt: at(30 * DAY) });
    expect(sessionExpired(times, at(30 * DAY - 1))).toBe(false);
    expect(sessionExpired(times, at(30 * DAY))).toBe(true);
  });

  it("writes a session's last use at most once per refresh interval", () => {
    const s = newSessionTimes(t0, lifetime);
    expect(sessionRefresh(s, at(lifetime.refreshMs - 1), lifetime)).toBeUndefined();
    expect(sessionRefresh(s, at(lifetime.refreshMs), lifetime)?.lastSeenAt).toEqual(at(lifetime.refreshMs));
  });

  it("never gives an idle end past the maximum, however long the idle time", () => {
    const s = newSessionTimes(t0, { idleMs: 60 * DAY, maxMs: 30 * DAY, refreshMs: 0 });
    expect(s.idleExpiresAt).toEqual(s.expiresAt);
  });

  it("gives a link 15 minutes unless asked, and at most a day", () => {
    expect(DEFAULT_LINK_VALIDITY_S).toBe(900);
    expect(linkValidity(0)).toEqual({ seconds: 900 });
    expect(linkValidity(60)).toEqual({ seconds: 60 });
    expect(linkValidity(86_400)).toEqual({ seconds: 86_400 });
    expect(linkValidity(86_401)).toEqual({ problem: "must be between 1 and 86400 seconds (24 hours)" });
    expect(linkValidity(-1)).toHaveProperty("problem");
  });
});
