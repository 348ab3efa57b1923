import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ALL_SCOPES } from "./scopes.js";

describe("ALL_SCOPES", () => {
  it("is the identity service's list of scopes, in the same order", () => {
    // Read as text: the launcher imports nothing from the services.
    const source = readFileSync(join(__dirname, "../../services/identity/src/scopes.ts"), "utf8");
    const list = /ALL_SCOPES\s*=\s*\[([^\]]*)\]/.exec(source)?.[1] ?? "";
    const identityScopes = [...list.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
    expect(identityScopes.length).toBeGreaterThan(0);
    expect([...ALL_SCOPES]).toEqual(identityScopes);
  });
});
