import { DEFAULT_SIGN_IN_LIMITS, exceededLimit, failureWindow, limitKey, limitMessage } from "./sign-in-limits.js";

describe("sign-in limits", () => {
  it("allows 10 failures per account and 50 per address in 15 minutes", () => {
    expect(DEFAULT_SIGN_IN_LIMITS).toEqual({ accountFailures: 10, addressFailures: 50, windowMs: 15 * 60_000 });
    const limits = DEFAULT_SIGN_IN_LIMITS;
    expect(exceededLimit({ account: 10, address: 50 }, limits)).toBeUndefined();
    expect(exceededLimit({ account: 11, address: 1 }, limits)).toBe("account");
    expect(exceededLimit({ account: 1, address: 51 }, limits)).toBe("address");
    expect(exceededLimit({ account: 11, address: 51 }, limits)).toBe("account");
  });

  it("counts in fixed windows", () => {
    const w = failureWindow(new Date("2026-03-01T10:22:33Z"), 15 * 60_000);
    expect(w).toEqual({ start: new Date("2026-03-01T10:15:00Z"), end: new Date("2026-03-01T10:30:00Z") });
  });

  it("keys an account by its email regardless of case, and keeps neither the email nor the address as typed", () => {
    expect(limitKey("account", " Ann@Example.com ")).toBe(limitKey("account", "ann@example.com"));
    expect(limitKey("account", "ann@example.com")).not.toBe(limitKey("address", "ann@example.com"));
    expect(limitKey("account", "ann@example.com")).toMatch(/^account:[0-9a-f]{64}$/);
    expect(limitKey("address", "192.0.2.1")).toMatch(/^address:[0-9a-f]{64}$/);
  });

  it("says what was exceeded and when to try again", () => {
    const until = new Date("2026-03-01T10:30:00Z");
    expect(limitMessage("account", until)).toBe(
      "Too many failed sign-ins for this account. Try again after 10:30 UTC (2026-03-01T10:30:00Z).",
    );
    expect(limitMessage("address", until)).toContain("from this address");
  });
});
