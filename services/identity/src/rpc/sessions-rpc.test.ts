import { Code } from "@connectrpc/connect";
import { Role } from "@conveyor/proto/identity";
import { ALL_SCOPES } from "@conveyor/runtime";
import { failure, signInSetup } from "../test-support.js";

const PASSWORD = "correct horse battery";
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

async function signedIn(role = Role.MEMBER) {
  const s = await signInSetup();
  const ann = await s.user("Ann", PASSWORD, role);
  const signIn = () => s.ids.signInWithPassword({ email: ann.email, password: PASSWORD, clientAddress: "192.0.2.1" });
  const { secret, session } = await signIn();
  return { ...s, ann, secret, sessionId: session?.id ?? "", signIn };
}

describe("sessions", () => {
  it("authenticate as the user with every REST scope and the user's memberships, as a token without an allow-list", async () => {
    const s = await signedIn(Role.ADMIN);
    const { organization: other } = await s.ids.createOrganization({ name: "Other" });
    await s.ids.addMember({ organization: other?.id ?? "", userId: s.ann.id, role: Role.MEMBER });
    const { principal, session } = await s.ids.authenticateSession({ secret: s.secret });
    expect(principal?.token).toMatchObject({
      id: `session:${s.sessionId}`,
      userId: s.ann.id,
      scopes: [...ALL_SCOPES],
      organizationIds: [],
    });
    expect(principal?.user?.email).toBe("ann@example.com");
    expect(principal?.organizations.map((o) => [o.organization?.name, o.role])).toEqual([
      ["Acme", Role.ADMIN],
      ["Other", Role.MEMBER],
    ]);
    // As a token of the same user without an allow-list sees it.
    const { secret: token } = await s.ids.createAccessToken({ userId: s.ann.id, scopes: ["read_builds"] });
    const viaToken = await s.ids.authenticateAccessToken({ secret: token });
    expect(principal?.organizations).toEqual(viaToken.principal?.organizations);
    expect(session).toMatchObject({ id: s.sessionId, userId: s.ann.id });
  });

  it("end when signed out, announcing the one session; signing out twice is not an error", async () => {
    const s = await signedIn();
    const other = await s.signIn();
    s.published.length = 0;
    await s.ids.endSession({ secret: s.secret });
    expect(s.published).toEqual([
      { subject: "ci.identity.session_ended", message: { userId: s.ann.id, sessionId: s.sessionId } },
    ]);
    expect((await failure(s.ids.authenticateSession({ secret: s.secret }))).code).toBe(Code.Unauthenticated);
    expect(await failure(s.ids.authenticateSession({ secret: other.secret }))).toEqual({});
    expect(await failure(s.ids.endSession({ secret: s.secret }))).toEqual({});
    expect(s.published).toHaveLength(1);
  });

  it("end together for a user", async () => {
    const s = await signedIn();
    const other = await s.signIn();
    const { ended } = await s.ids.endUserSessions({ userId: s.ann.id });
    expect(ended).toBe(2);
    for (const secret of [s.secret, other.secret]) {
      expect((await failure(s.ids.authenticateSession({ secret }))).code).toBe(Code.Unauthenticated);
    }
    expect(s.published.at(-1)).toEqual({
      subject: "ci.identity.session_ended",
      message: { userId: s.ann.id, sessionId: "" },
    });
  });

  it("expire after 14 idle days, move on when used (written at most every 5 minutes), and end after 30 days", async () => {
    const s = await signedIn();
    const authenticate = () => failure(s.ids.authenticateSession({ secret: s.secret }));
    // Used often within minutes: no write.
    for (let i = 0; i < 4; i++) {
      s.advance(MINUTE);
      expect(await authenticate()).toEqual({});
    }
    expect(s.touches()).toBe(0);
    s.advance(MINUTE);
    expect(await authenticate()).toEqual({});
    expect(s.touches()).toBe(1);
    // Used every 13 days, it lives to its maximum of 30 days from the sign-in.
    for (let day = 13; day < 30; day += 13) {
      s.advance(13 * DAY);
      expect(await authenticate()).toEqual({});
    }
    s.advance(30 * DAY - 26 * DAY - 5 * MINUTE - 1);
    expect(await authenticate()).toEqual({});
    s.advance(1);
    expect((await authenticate()).code).toBe(Code.Unauthenticated);

    // Left alone for 14 days, a new one ends.
    const fresh = await s.signIn();
    s.advance(14 * DAY - 1);
    expect(await failure(s.ids.authenticateSession({ secret: fresh.secret }))).toEqual({});
    s.advance(14 * DAY);
    expect((await failure(s.ids.authenticateSession({ secret: fresh.secret }))).code).toBe(Code.Unauthenticated);
  });

  it("refuse an empty or unknown secret, and an access token's", async () => {
    const s = await signedIn();
    const { secret: token } = await s.ids.createAccessToken({ userId: s.ann.id, scopes: ["read_builds"] });
    for (const secret of ["", "cvs_unknown", token]) {
      expect((await failure(s.ids.authenticateSession({ secret }))).code).toBe(Code.Unauthenticated);
    }
    // Nor is a session's secret an access token.
    expect((await failure(s.ids.authenticateAccessToken({ secret: s.secret }))).code).toBe(Code.Unauthenticated);
  });
});
