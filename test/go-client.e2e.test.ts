import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { stack } from "./support/stack-env.js";

// Builds test/go-client (the official go-buildkite client) once into the tool cache and runs it against the stack.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "go-client-check");

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "."], { cwd: join(process.cwd(), "test/go-client"), stdio: "inherit" });
}, 300_000);

describe("go-buildkite decodes our organization routes", () => {
  it("lists, gets, pages and reports errors as the real client expects", () => {
    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: stack.apiToken,
          CONVEYOR_ORG_SLUG: stack.orgSlug,
        },
        encoding: "utf8",
      }),
    );
    expect(out.organization.slug).toBe(stack.orgSlug);
    expect(out.organization.created_at).toMatch(/Z$/);
    expect(out.organizations.map((o: { slug: string }) => o.slug)).toContain(stack.orgSlug);
    expect(out.members.length).toBeGreaterThan(0);
    expect(out.member.id).toBe(out.members[0].id);
    expect(out.access_token.scopes).toContain("read_organizations");
    expect(out.missing_org_status).toBe(404);
    expect(out.missing_org_error).toBe("No organization found");
    if (out.members.length > 1) expect(out.members_page1).toMatchObject({ count: 1, next_page: 2 });
  });
});
