import { isDuplicateKeyError } from "./duplicate-key.js";

describe("isDuplicateKeyError", () => {
  it("takes MongoDB's code 11000", () => {
    expect(isDuplicateKeyError({ code: 11000, message: "E11000 duplicate key error" })).toBe(true);
  });

  it("takes FerretDB v1's InternalError carrying SQLite's unique constraint message", () => {
    expect(isDuplicateKeyError({ code: 1, message: "UNIQUE constraint failed: index 'name_1'" })).toBe(true);
  });

  it("refuses other errors and non-errors", () => {
    expect(isDuplicateKeyError({ code: 1, message: "some other internal error" })).toBe(false);
    expect(isDuplicateKeyError({ code: 2 })).toBe(false);
    expect(isDuplicateKeyError(new Error("no code"))).toBe(false);
    expect(isDuplicateKeyError(null)).toBe(false);
    expect(isDuplicateKeyError("11000")).toBe(false);
  });
});
