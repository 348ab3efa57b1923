import { readIdentityConfig } from "./config.js";
import { DEFAULT_SESSION_LIFETIME } from "./domain/session-lifetime.js";
import { DEFAULT_SIGN_IN_LIMITS } from "./domain/sign-in-limits.js";

const DAY = 24 * 3600_000;

describe("identity config", () => {
  it("takes the documented defaults", () => {
    const { signIn } = readIdentityConfig({});
    expect(signIn.lifetime).toEqual(DEFAULT_SESSION_LIFETIME);
    expect(signIn.limits).toEqual(DEFAULT_SIGN_IN_LIMITS);
    expect(signIn.passwordCost).toEqual({ N: 2 ** 15, r: 8, p: 1 });
  });

  it("reads the session lifetimes and the failure limits, an idle time past the maximum cut to it", () => {
    const { signIn } = readIdentityConfig({
      SESSION_IDLE_DAYS: "10",
      SESSION_MAX_DAYS: "7",
      SIGN_IN_ACCOUNT_FAILURES: "3",
      SIGN_IN_ADDRESS_FAILURES: "500",
      SIGN_IN_WINDOW_MINUTES: "60",
    });
    expect(signIn.lifetime).toMatchObject({ idleMs: 7 * DAY, maxMs: 7 * DAY });
    expect(signIn.limits).toEqual({ accountFailures: 3, addressFailures: 500, windowMs: 3600_000 });
  });

  it("stops on a value it cannot use, naming the variable", () => {
    expect(() => readIdentityConfig({ SIGN_IN_ACCOUNT_FAILURES: "0" })).toThrow(/SIGN_IN_ACCOUNT_FAILURES/);
    expect(() => readIdentityConfig({ SESSION_MAX_DAYS: "a month" })).toThrow(/SESSION_MAX_DAYS/);
  });
});
