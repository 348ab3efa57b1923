import { StackStartError } from "../stack/wait.js";
import type { GiteaServer } from "./gitea.js";
import { DEFAULT_GITEA_PORT, forgeChoice, giteaBinary, giteaPort, giteaSummary } from "./local-forge.js";

describe("forgeChoice (CONVEYOR_FORGE)", () => {
  it("is none when unset or blank, so that nothing of Gitea is built or run", () => {
    expect(forgeChoice({})).toBeUndefined();
    expect(forgeChoice({ CONVEYOR_FORGE: " " })).toBeUndefined();
  });

  it("is gitea when it says so", () => {
    expect(forgeChoice({ CONVEYOR_FORGE: "gitea" })).toBe("gitea");
  });

  it.each(["forgejo", "Gitea", "github", "1"])("refuses %s, naming the variable", (value) => {
    expect(() => forgeChoice({ CONVEYOR_FORGE: value })).toThrow(StackStartError);
    expect(() => forgeChoice({ CONVEYOR_FORGE: value })).toThrow(`CONVEYOR_FORGE must be "gitea" or unset`);
  });
});

describe("giteaPort (GITEA_PORT)", () => {
  it("is 3000 by default, else the port given", () => {
    expect(giteaPort({})).toBe(DEFAULT_GITEA_PORT);
    expect(DEFAULT_GITEA_PORT).toBe(3000);
    expect(giteaPort({ GITEA_PORT: "3300" })).toBe(3300);
    expect(giteaPort({ GITEA_PORT: "65535" })).toBe(65_535);
  });

  it.each(["0", "65536", "-1", "30.5", "3000x", "port"])("refuses %s, naming the variable", (value) => {
    expect(() => giteaPort({ GITEA_PORT: value })).toThrow(/^GITEA_PORT must be a TCP port/);
  });
});

describe("giteaBinary", () => {
  it("refuses a GITEA_BIN that does not exist, naming it, and builds nothing", async () => {
    const log = jest.fn();
    await expect(
      giteaBinary({ GITEA_BIN: "/no/such/gitea" }, { cache: "/no/cache", logsDir: "/no/logs", env: {}, log }),
    ).rejects.toThrow("gitea binary /no/such/gitea (set by GITEA_BIN) does not exist");
    expect(log).not.toHaveBeenCalled();
  });
});

describe("giteaSummary", () => {
  it("shows where Gitea is, its data and log, and its admin's credentials", () => {
    const gitea = {
      url: "http://127.0.0.1:3000",
      dataDir: "/repo/.data/gitea",
      logFile: "/repo/.data/gitea/log/gitea.log",
      adminUser: { name: "conveyor", email: "conveyor@example.com", password: "pw" },
      token: "tok",
    } as GiteaServer;
    const lines = giteaSummary(gitea, (p) => p.replace("/repo/", ""));
    expect(lines[0]).toContain("http://127.0.0.1:3000/");
    expect(lines[0]).toContain("data in .data/gitea, log .data/gitea/log/gitea.log");
    expect(lines[1]).toContain("conveyor / pw");
    expect(lines[1]).toContain("API token tok");
    expect(lines.join("\n")).toContain("provider.webhook_url");
  });
});
