import { expiredKeys, type OidcKeyInfo, publishedKeys, signingKey } from "./oidc-keys.js";

const at = (s: number) => new Date(s * 1000);
const key = (kid: string, signsFromS: number): OidcKeyInfo => ({
  kid,
  createdAt: at(signsFromS - 15),
  signsFrom: at(signsFromS),
});
const kids = (keys: OidcKeyInfo[]) => keys.map((k) => k.kid);

describe("OIDC signing keys", () => {
  const a = key("a", 1000);
  const b = key("b", 5000);
  const MAX = 600;

  it("signs with the newest key that has started", () => {
    expect(signingKey([a, b], at(999))).toBeUndefined();
    expect(signingKey([a, b], at(4999))?.kid).toBe("a");
    expect(signingKey([a, b], at(5000))?.kid).toBe("b");
    expect(signingKey([key("y", 10), key("x", 10)], at(10))?.kid).toBe("y");
  });

  it("publishes a new key before it signs", () => {
    expect(kids(publishedKeys([a, b], at(4990), MAX))).toEqual(["b", "a"]);
  });

  it("keeps a retired key until its tokens have expired (and a minute for clocks), then lets it go", () => {
    expect(kids(publishedKeys([a, b], at(5000 + MAX + 59), MAX))).toEqual(["b", "a"]);
    expect(kids(publishedKeys([a, b], at(5000 + MAX + 60), MAX))).toEqual(["b"]);
    expect(kids(expiredKeys([a, b], at(5000 + MAX + 60), MAX))).toEqual(["a"]);
  });

  it("counts a key's retirement from its successor's start, not from the newest key's", () => {
    const c = key("c", 5300);
    expect(kids(publishedKeys([a, b, c], at(5000 + MAX + 61), MAX))).toEqual(["c", "b"]);
  });
});
