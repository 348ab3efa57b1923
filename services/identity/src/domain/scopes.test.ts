import { ALL_SCOPES, parseScopes } from "./scopes.js";

describe("parseScopes", () => {
  it("keeps known scopes once, in documented order", () => {
    expect(parseScopes(["write_builds", "read_builds", " read_builds "])).toEqual({
      scopes: ["read_builds", "write_builds"],
      unknown: [],
    });
  });

  it("reports unknown scopes", () => {
    expect(parseScopes(["read_builds", "admin", "root"]).unknown).toEqual(["admin", "root"]);
  });

  it("covers every scope the REST API uses", () => {
    for (const scope of [
      "read_builds",
      "write_builds",
      "read_pipelines",
      "write_pipelines",
      "read_artifacts",
      "write_artifacts",
      "read_organizations",
      "view_teams",
      "write_teams",
      "read_rules",
      "write_rules",
      "read_registries",
      "write_registries",
    ]) {
      expect(ALL_SCOPES).toContain(scope);
    }
  });
});
