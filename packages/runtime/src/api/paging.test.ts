import { pageWindow } from "./paging.js";

describe("pageWindow", () => {
  it.each([
    [undefined, undefined, { page: 1, perPage: 30, skip: 0 }],
    [0, 0, { page: 1, perPage: 30, skip: 0 }],
    [3, 10, { page: 3, perPage: 10, skip: 20 }],
    [2, 1000, { page: 2, perPage: 100, skip: 100 }],
  ])("page %s per_page %s", (page, perPage, expected) => {
    expect(pageWindow(page, perPage)).toEqual(expected);
  });
});
