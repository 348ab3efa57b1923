import { buildTestApp } from "../testing/test-app.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";

describe("pageOf", () => {
  it("defaults to page 1 of 30", () => {
    expect(pageOf({})).toEqual({ page: 1, perPage: 30 });
  });

  it("caps per_page at 100 silently", () => {
    expect(pageOf({ page: 3, per_page: 500 })).toEqual({ page: 3, perPage: 100 });
  });
});

describe("the paging of every REST list", () => {
  type Parameter = { in: string; name: string; schema: unknown };
  type Operation = { operationId: string; parameters?: Parameter[] };

  it("is the one PagingQuery schema: every list operation takes page and per_page, declared alike", async () => {
    const { app } = await buildTestApp({ orgs: [], users: [], tokens: new Map(), revoked: [] });
    const doc = (await app.inject({ method: "GET", url: "/v2/openapi.json" })).json() as {
      paths: Record<string, Record<string, Operation>>;
    };
    await app.close();
    const lists = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith("/v2/"))
      .flatMap(([, ops]) => Object.values(ops))
      .filter((op) => op.operationId.startsWith("list"));
    expect(lists.length).toBeGreaterThanOrEqual(15);
    // As the document writes a parameter: its schema without TypeBox's marks, its description beside it.
    const expected = Object.entries(PagingQuery.properties).map(([name, declared]) => {
      const { description: _description, ...schema } = JSON.parse(JSON.stringify(declared));
      return { name, schema: expect.objectContaining(schema) };
    });
    for (const op of lists) {
      const paging = (op.parameters ?? [])
        .filter((p) => p.in === "query" && (p.name === "page" || p.name === "per_page"))
        .map((p) => ({ name: p.name, schema: p.schema }));
      expect([op.operationId, paging]).toEqual([op.operationId, expected]);
    }
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
