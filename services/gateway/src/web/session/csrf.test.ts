import type { FastifyRequest } from "fastify";
import { csrfField, fromAnotherSite, rememberSessionSecret, sessionCsrfToken } from "./csrf.js";
import { secureCookies } from "./session-cookie.js";

const request = (headers: Record<string, string>, protocol = "http", host = "ci.local:8080") =>
  ({ headers, protocol, host }) as unknown as FastifyRequest;

describe("CSRF", () => {
  it("takes a post from the site's address or the request's own origin, or from a client sending neither header", () => {
    const web = "https://ci.example.com";
    expect(fromAnotherSite(request({}), web)).toBe(false);
    expect(fromAnotherSite(request({ origin: "https://ci.example.com" }), web)).toBe(false);
    expect(fromAnotherSite(request({ origin: "http://ci.local:8080" }), web)).toBe(false);
    expect(fromAnotherSite(request({ "sec-fetch-site": "same-origin", origin: "http://ci.local:8080" }), web)).toBe(
      false,
    );
  });

  it("refuses another origin, an opaque one, and any fetch the browser calls other than same-origin", () => {
    const web = "https://ci.example.com";
    for (const origin of [
      "https://evil.example",
      "null",
      "https://ci.example.com.evil.example",
      "http://ci.example.com",
    ]) {
      expect([origin, fromAnotherSite(request({ origin }), web)]).toEqual([origin, true]);
    }
    for (const site of ["cross-site", "same-site", "none"]) {
      expect([site, fromAnotherSite(request({ "sec-fetch-site": site }), web)]).toEqual([site, true]);
    }
  });

  it("gives each session its own token, which does not reveal the secret", () => {
    const a = sessionCsrfToken("cvs_a");
    expect(a).toBe(sessionCsrfToken("cvs_a"));
    expect(a).not.toBe(sessionCsrfToken("cvs_b"));
    expect(a).not.toContain("cvs_a");
    const signedIn = request({});
    rememberSessionSecret(signedIn, "cvs_a");
    expect(csrfField(signedIn).value).toBe(`<input type="hidden" name="_csrf" value="${a}">`);
    expect(csrfField(request({})).value).toBe("");
  });

  it("makes cookies Secure when the request came over https or the site's address is https", () => {
    expect(secureCookies(request({}, "http"), "http://127.0.0.1:8080")).toBe(false);
    expect(secureCookies(request({}, "https"), "http://127.0.0.1:8080")).toBe(true);
    expect(secureCookies(request({}, "http"), "https://ci.example.com")).toBe(true);
  });
});
