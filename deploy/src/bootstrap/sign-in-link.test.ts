import { adminSignInLink, stackWebUrl } from "./sign-in-link.js";

describe("the admin's sign-in link", () => {
  it("is at the pages' address: WEB_URL, else PUBLIC_URL, else the gateway's", () => {
    const info = { apiUrl: "http://127.0.0.1:8080" };
    expect(stackWebUrl(info, {})).toBe("http://127.0.0.1:8080");
    expect(stackWebUrl(info, { PUBLIC_URL: "https://api.example.com/" })).toBe("https://api.example.com");
    expect(stackWebUrl(info, { PUBLIC_URL: "https://api.example.com", WEB_URL: "https://ci.example.com" })).toBe(
      "https://ci.example.com",
    );
  });

  it("is made anew for the admin, with identity's default validity", async () => {
    const asked: unknown[] = [];
    const identity = {
      async createSignInLink(req: unknown) {
        asked.push(req);
        return { secret: "cvl_123", expiresAt: { seconds: BigInt(1_772_360_100), nanos: 0 } };
      },
    };
    const link = await adminSignInLink(identity as never, "http://127.0.0.1:8080", "u1");
    expect(link).toEqual({ url: "http://127.0.0.1:8080/login/link/cvl_123", expiresAt: "2026-03-01T10:15:00.000Z" });
    expect(asked).toEqual([{ userId: "u1" }]);
  });
});
