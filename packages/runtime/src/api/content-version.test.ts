import { contentVersion } from "./content-version.js";

describe("contentVersion", () => {
  it("names equal parts equally, any other parts otherwise, in 22 base64url characters", () => {
    const v = contentVersion("a", new Uint8Array([1, 2]));
    expect(v).toMatch(/^[\w-]{22}$/);
    expect(contentVersion("a", new Uint8Array([1, 2]))).toBe(v);
    expect(contentVersion("a", new Uint8Array([1, 3]))).not.toBe(v);
    expect(contentVersion("a,b")).not.toBe(contentVersion("a", "b"));
    expect(contentVersion("ab")).not.toBe(contentVersion("a", "b"));
  });
});
