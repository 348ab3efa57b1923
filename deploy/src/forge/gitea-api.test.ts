import { readFileSync } from "node:fs";
import { join } from "node:path";
import { accessTokenIn } from "./gitea.js";
import { cookieHeader, parseHookHistory } from "./gitea-api.js";

// A hook's page of Gitea v1.26.0 after two deliveries, the first answered 401 and the second 200 (its recent
// deliveries' list, as Gitea rendered it; the payloads cut to their first fields).
const HISTORY = readFileSync(join(__dirname, "testdata", "gitea-hook-history.html.txt"), "utf8");

describe("parseHookHistory", () => {
  it("reads each delivery of a real hook page, newest first: its id, event, status, payload and answer", () => {
    const deliveries = parseHookHistory(HISTORY);
    expect(deliveries.map(({ uuid, event, status, succeeded }) => ({ uuid, event, status, succeeded }))).toEqual([
      { uuid: "55a817bd-8617-40ae-9f5e-e4a8b233ad5c", event: "push", status: 200, succeeded: true },
      { uuid: "ca94cad2-c31e-4b3b-a009-3a02eb361937", event: "push", status: 401, succeeded: false },
    ]);
    const [newest, oldest] = deliveries;
    expect(JSON.parse(newest?.requestBody ?? "")).toEqual({
      ref: "refs/heads/main",
      before: "d867f34e7fc3c3ab403ebd836d75e1c863fd96a3",
      after: "3b1beff141ae9ee9a6f6e6ac8bf2ab4e7946ad37",
    });
    expect(JSON.parse(newest?.responseBody ?? "")).toEqual({ message: "Received: 1 build created." });
    // The answer's text is HTML-escaped on the page and given back as it was sent.
    expect(JSON.parse(oldest?.responseBody ?? "")).toEqual({ message: "The webhook's signature is wrong & <bad>" });
  });

  it("reads no delivery from a page without any, and leaves the status out of one not answered", () => {
    expect(parseHookHistory('<div class="ui list"></div>')).toEqual([]);
    const pending = HISTORY.replace(
      /<span class="ui (green|red) label">\d+<\/span>/g,
      '<span class="ui label">-</span>',
    );
    const [first] = parseHookHistory(pending);
    expect(first).toMatchObject({ event: "push", succeeded: false });
    expect(first?.status).toBeUndefined();
  });
});

describe("cookieHeader", () => {
  it("keeps the last value of each cookie, as a browser does, and drops the removed ones", () => {
    expect(
      cookieHeader([
        "i_like_gitea=7ae7660d9708a2c9; Path=/; HttpOnly; SameSite=Lax",
        "i_like_gitea=7042227643609ec0; Path=/; HttpOnly; SameSite=Lax",
        "lang=en-US; Path=/; HttpOnly; SameSite=Lax",
        "redirect_to=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax",
      ]),
    ).toBe("i_like_gitea=7042227643609ec0; lang=en-US");
    expect(cookieHeader(["a=1", "a=x; Max-Age=0", "b=2; max-age=-1", "=nameless", "junk"])).toBe("");
  });
});

describe("accessTokenIn", () => {
  const token = "034dd80aee9e61941857d4f860deb2a8f7b49388";

  it("finds the token under the warnings Gitea prints first (as root, it warns on stdout)", () => {
    const warning =
      "2026/11/27 15:17:59 modules/setting/setting.go:190:loadRunModeFrom() [E] You are running Gitea using the root user";
    expect(accessTokenIn(`${warning}\n${token}\n`)).toBe(token);
    expect(accessTokenIn(token)).toBe(token);
  });

  it("refuses output without one", () => {
    expect(() => accessTokenIn("Command error: user does not exist\n")).toThrow(/printed no token/);
    expect(() => accessTokenIn(`${token}0\n`)).toThrow(/printed no token/);
  });
});
