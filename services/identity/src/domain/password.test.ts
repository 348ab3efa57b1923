import {
  costOf,
  dummyHash,
  hashPassword,
  PASSWORD_COST,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  passwordProblem,
  verifyPassword,
} from "./password.js";

const cheap = { N: 2 ** 10, r: 8, p: 1 };

describe("passwords", () => {
  it("hashes with scrypt at the memory-hard cost by default, parameters and salt in the stored string", async () => {
    expect(PASSWORD_COST).toEqual({ N: 2 ** 15, r: 8, p: 1 });
    const stored = await hashPassword("correct horse battery");
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    expect(stored).not.toContain("correct horse");
    expect(costOf(stored)).toEqual(PASSWORD_COST);
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
    expect(await verifyPassword("correct horse batterY", stored)).toBe(false);
  });

  it("salts every hash, and verifies with the parameters a hash was made with", async () => {
    const a = await hashPassword("same password here", cheap);
    const b = await hashPassword("same password here", cheap);
    expect(a).not.toBe(b);
    expect(costOf(a)).toEqual(cheap);
    expect(await verifyPassword("same password here", a)).toBe(true);
    expect(await verifyPassword("same password here", b)).toBe(true);
  });

  it("takes a password typed with composed or decomposed accents as the same", async () => {
    const stored = await hashPassword("cr\u00e8me br\u00fbl\u00e9e!", cheap);
    expect(await verifyPassword("cre\u0300me bru\u0302le\u0301e!", stored)).toBe(true);
  });

  it("refuses a stored string it did not make rather than calling it a mismatch", async () => {
    for (const damaged of [
      "",
      "plain",
      "bcrypt$1$2$3$a$b",
      "scrypt$1000$8$1$c2FsdA==$a2V5",
      "scrypt$4194304$8$1$a$b",
    ]) {
      await expect(verifyPassword("anything", damaged)).rejects.toThrow(/scrypt\$N\$r\$p\$salt\$hash/);
    }
  });

  it("makes one hash of no one's password per cost, which no password is likely to match", async () => {
    const dummy = await dummyHash(cheap);
    expect(await dummyHash(cheap)).toBe(dummy);
    expect(costOf(dummy)).toEqual(cheap);
    expect(await verifyPassword("", dummy)).toBe(false);
  });

  it("says which rule a new password breaks", () => {
    expect(passwordProblem("short")).toBe(`is too short: use at least ${PASSWORD_MIN_LENGTH} characters`);
    expect(passwordProblem("a".repeat(PASSWORD_MIN_LENGTH))).toBe("must not be one character repeated");
    expect(passwordProblem(`${"x".repeat(PASSWORD_MAX_LENGTH)}y`)).toBe(
      `is too long: use at most ${PASSWORD_MAX_LENGTH} characters`,
    );
    // Characters, not UTF-16 units: twelve emoji are twelve characters.
    expect(passwordProblem("🙂🙃".repeat(6))).toBeUndefined();
    expect(passwordProblem(`${"🙂".repeat(11)}x`)).toBeUndefined();
    expect(passwordProblem(`${"🙂".repeat(5)}x`)).toMatch(/too short/);
    expect(passwordProblem("correct horse battery")).toBeUndefined();
  });
});
