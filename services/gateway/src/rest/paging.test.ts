import { linkHeader, parsePaging } from "./paging.js";

describe("parsePaging", () => {
  it("defaults to page 1 of 30", () => {
    expect(parsePaging({})).toEqual({ page: 1, perPage: 30 });
  });

  it("caps per_page at 100 silently", () => {
    expect(parsePaging({ page: "3", per_page: "500" })).toEqual({ page: 3, perPage: 100 });
  });

  it.each([{ page: "0" }, { per_page: "0" }, { page: "x" }, { per_page: "-5" }])("rejects %j", (q) => {
    expect(() => parsePaging(q)).toThrow(/must be a positive integer/);
  });
});

describe("linkHeader", () => {
  const base = "https://ci.example.com";

  it("is absent when everything fits on one page", () => {
    expect(linkHeader(base, "/v2/x", { page: 1, perPage: 30 }, { total: 30 })).toBeUndefined();
    expect(linkHeader(base, "/v2/x", { page: 1, perPage: 30 }, { hasMore: false })).toBeUndefined();
  });

  it("keeps filters, writes page explicitly and carries a non-default per_page", () => {
    const link = linkHeader(base, "/v2/x?branch=main&page=2", { page: 2, perPage: 10 }, { total: 35 });
    expect(link).toBe(
      [
        '<https://ci.example.com/v2/x?branch=main&page=3&per_page=10>; rel="next"',
        '<https://ci.example.com/v2/x?branch=main&page=1&per_page=10>; rel="prev"',
        '<https://ci.example.com/v2/x?branch=main&page=1&per_page=10>; rel="first"',
        '<https://ci.example.com/v2/x?branch=main&page=4&per_page=10>; rel="last"',
      ].join(", "),
    );
  });

  it("leaves out last when the total is unknown", () => {
    const link = linkHeader(base, "/v2/x", { page: 1, perPage: 30 }, { hasMore: true }) ?? "";
    expect(link).toContain('page=2>; rel="next"');
    expect(link).not.toContain('rel="last"');
  });

  it("keeps a path prefix of the public URL", () => {
    const link = linkHeader("https://host/ci", "/v2/x", { page: 1, perPage: 30 }, { total: 31 }) ?? "";
    expect(link).toContain("<https://host/ci/v2/x?page=2>");
  });

  it("has no prev link on the first page", () => {
    const link = linkHeader(base, "/v2/x?page=1&per_page=1", { page: 1, perPage: 1 }, { total: 2 }) ?? "";
    expect(link.split(", ")).toHaveLength(3);
  });
});
