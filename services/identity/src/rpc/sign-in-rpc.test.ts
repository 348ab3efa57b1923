import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { failure, signInSetup } from "../test-support.js";
import { UNUSABLE_LINK, WRONG_CREDENTIALS } from "./sign-in-rpc.js";

const PASSWORD = "correct horse battery";
const MINUTE = 60_000;

describe("signing in with a password", () => {
  it("starts a session for the right password, whatever the email's case", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann", PASSWORD);
    const { session, secret } = await s.ids.signInWithPassword({
      email: " ANN@example.com",
      password: PASSWORD,
      clientAddress: "192.0.2.1",
    });
    expect(secret).toMatch(/^cvs_[0-9a-f]{40}$/);
    expect(session).toMatchObject({ userId: ann.id });
    const { principal } = await s.ids.authenticateSession({ secret });
    expect(principal?.user?.id).toBe(ann.id);
  });

  it("answers a wrong password, an unknown email and a user without a password alike", async () => {
    const s = await signInSetup();
    await s.user("Ann", PASSWORD);
    await s.user("Bob");
    const attempts = [
      { email: "ann@example.com", password: "not the password" },
      { email: "nobody@example.com", password: PASSWORD },
      { email: "bob@example.com", password: PASSWORD },
      { email: "bob@example.com", password: "" },
    ];
    for (const attempt of attempts) {
      expect(await failure(s.ids.signInWithPassword({ ...attempt, clientAddress: "192.0.2.1" }))).toMatchObject({
        code: Code.Unauthenticated,
        message: WRONG_CREDENTIALS,
      });
    }
  });

  it("takes about as long for an unknown email as for a wrong password (the scrypt work is done anyway)", async () => {
    const s = await signInSetup({ realCost: true });
    await s.user("Ann", PASSWORD);
    const median = async (email: string) => {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        await failure(
          s.ids.signInWithPassword({ email, password: "wrong password!", clientAddress: `198.51.100.${i}` }),
        );
        times.push(performance.now() - started);
      }
      return times.sort((a, b) => a - b)[2] as number;
    };
    await median("warm@example.com");
    const [known, unknown] = [await median("ann@example.com"), await median("nobody@example.com")];
    // One scrypt verification at the real cost takes tens of milliseconds; without it, an unknown email would be
    // answered in well under one.
    expect(known).toBeGreaterThan(10);
    expect(unknown / known).toBeGreaterThan(0.5);
    expect(unknown / known).toBeLessThan(2);
  }, 60_000);

  it("locks an account's sign-in after 10 failures in the window, right password or not, until the window ends", async () => {
    const s = await signInSetup();
    await s.user("Ann", PASSWORD);
    await s.user("Bob", PASSWORD);
    const signIn = (email: string, password: string, clientAddress = "192.0.2.1") =>
      failure(s.ids.signInWithPassword({ email, password, clientAddress }));
    for (let i = 0; i < 10; i++) expect((await signIn("ann@example.com", "wrong")).code).toBe(Code.Unauthenticated);
    const locked = await signIn("ann@example.com", PASSWORD, "203.0.113.9");
    expect(locked.code).toBe(Code.ResourceExhausted);
    expect(locked.message).toBe(
      "Too many failed sign-ins for this account. Try again after 10:15 UTC (2026-03-01T10:15:00Z).",
    );
    // The same answer for an email no one has, after as many failures: the lock tells nothing about existence.
    for (let i = 0; i < 10; i++) await signIn("nobody@example.com", "wrong", "203.0.113.10");
    expect(await signIn("nobody@example.com", "wrong", "203.0.113.10")).toMatchObject({
      code: Code.ResourceExhausted,
      message: locked.message,
    });
    // Another account still signs in, from the same address.
    expect(await signIn("bob@example.com", PASSWORD)).toEqual({});
    s.advance(15 * MINUTE);
    expect(await signIn("ann@example.com", PASSWORD)).toEqual({});
  });

  it("refuses an address after 50 failures in the window, for every account, while other addresses go on", async () => {
    const s = await signInSetup();
    await s.user("Ann", PASSWORD);
    for (let i = 0; i < 50; i++) {
      const res = await failure(
        s.ids.signInWithPassword({ email: `guess${i}@example.com`, password: "x", clientAddress: "192.0.2.66" }),
      );
      expect(res.code).toBe(Code.Unauthenticated);
    }
    const refused = await failure(
      s.ids.signInWithPassword({ email: "ann@example.com", password: PASSWORD, clientAddress: "192.0.2.66" }),
    );
    expect(refused).toMatchObject({ code: Code.ResourceExhausted });
    expect(refused.message).toContain("from this address");
    expect(
      await failure(
        s.ids.signInWithPassword({ email: "ann@example.com", password: PASSWORD, clientAddress: "192.0.2.67" }),
      ),
    ).toEqual({});
  });

  it("does not count a success as a failure", async () => {
    const s = await signInSetup();
    await s.user("Ann", PASSWORD);
    const signIn = (password: string) =>
      failure(s.ids.signInWithPassword({ email: "ann@example.com", password, clientAddress: "192.0.2.1" }));
    for (let i = 0; i < 9; i++) await signIn("wrong");
    for (let i = 0; i < 5; i++) expect(await signIn(PASSWORD)).toEqual({});
    expect((await signIn("wrong")).code).toBe(Code.Unauthenticated);
    expect((await signIn(PASSWORD)).code).toBe(Code.ResourceExhausted);
  });

  it("counts concurrent failures exactly: of 30 at once, 10 are checked and 20 refused", async () => {
    const s = await signInSetup();
    await s.user("Ann", PASSWORD);
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        failure(s.ids.signInWithPassword({ email: "ann@example.com", password: "wrong", clientAddress: "192.0.2.1" })),
      ),
    );
    expect(results.filter((r) => r.code === Code.Unauthenticated)).toHaveLength(10);
    expect(results.filter((r) => r.code === Code.ResourceExhausted)).toHaveLength(20);
  });
});

describe("setting a password", () => {
  it("says the rule a refused password breaks", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann");
    const res = await failure(s.ids.setPassword({ userId: ann.id, password: "short" }));
    expect(res).toMatchObject({
      code: Code.InvalidArgument,
      message: "password is too short: use at least 12 characters",
    });
    expect((await failure(s.ids.setPassword({ userId: "nope", password: PASSWORD }))).code).toBe(Code.NotFound);
  });

  it("replaces the password and ends every session of the user, announcing it", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann", PASSWORD);
    const signIn = (password: string) =>
      s.ids.signInWithPassword({ email: ann.email, password, clientAddress: "192.0.2.1" });
    const { secret } = await signIn(PASSWORD);
    s.published.length = 0;
    await s.ids.setPassword({ userId: ann.id, password: "a new password now" });
    expect(s.published).toEqual([{ subject: "ci.identity.session_ended", message: { userId: ann.id, sessionId: "" } }]);
    expect((await failure(s.ids.authenticateSession({ secret }))).code).toBe(Code.Unauthenticated);
    expect((await failure(signIn(PASSWORD))).code).toBe(Code.Unauthenticated);
    expect(await failure(signIn("a new password now"))).toEqual({});
  });
});

describe("sign-in links", () => {
  it("signs in once, for 15 minutes by default", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann");
    const { secret, expiresAt } = await s.ids.createSignInLink({ userId: ann.id });
    expect(secret).toMatch(/^cvl_[0-9a-f]{40}$/);
    expect(expiresAt && timestampDate(expiresAt)).toEqual(new Date(s.now().getTime() + 15 * MINUTE));
    const { session } = await s.ids.signInWithLink({ secret, clientAddress: "192.0.2.1" });
    expect(session?.userId).toBe(ann.id);
    expect(await failure(s.ids.signInWithLink({ secret, clientAddress: "192.0.2.1" }))).toMatchObject({
      code: Code.Unauthenticated,
      message: UNUSABLE_LINK,
    });
  });

  it("lets exactly one of many concurrent uses of a link sign in", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann");
    const { secret } = await s.ids.createSignInLink({ userId: ann.id });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => failure(s.ids.signInWithLink({ secret, clientAddress: "192.0.2.1" }))),
    );
    expect(results.filter((r) => r.code === undefined)).toHaveLength(1);
    expect(results.filter((r) => r.code === Code.Unauthenticated)).toHaveLength(19);
  });

  it("refuses an expired link, an unknown one and a validity out of bounds", async () => {
    const s = await signInSetup();
    const ann = await s.user("Ann");
    const { secret } = await s.ids.createSignInLink({ userId: ann.id, validSeconds: 60 });
    s.advance(60_000);
    expect((await failure(s.ids.signInWithLink({ secret, clientAddress: "" }))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.ids.signInWithLink({ secret: "cvl_nope", clientAddress: "" }))).code).toBe(
      Code.Unauthenticated,
    );
    expect((await failure(s.ids.signInWithLink({ secret: "", clientAddress: "" }))).code).toBe(Code.Unauthenticated);
    expect(await failure(s.ids.createSignInLink({ userId: ann.id, validSeconds: 86_401 }))).toMatchObject({
      code: Code.InvalidArgument,
      message: "valid_seconds must be between 1 and 86400 seconds (24 hours)",
    });
    expect((await failure(s.ids.createSignInLink({ userId: "nope" }))).code).toBe(Code.NotFound);
  });
});
