import { connectionForRepository, parseRepositoryUrl, repositoryHostOfApiUrl } from "./repository-url.js";

describe("parseRepositoryUrl", () => {
  it.each([
    ["https://github.com/acme/widgets.git", "github.com", null, "acme", "widgets"],
    ["https://github.com/acme/widgets", "github.com", null, "acme", "widgets"],
    ["https://github.com/acme/widgets/", "github.com", null, "acme", "widgets"],
    ["http://127.0.0.1:3000/alice/demo.git", "127.0.0.1", 3000, "alice", "demo"],
    ["https://user:secret@gitlab.com/group/sub/project.git", "gitlab.com", null, "group/sub", "project"],
    ["ssh://git@github.com/acme/widgets.git", "github.com", null, "acme", "widgets"],
    ["ssh://git@gitea.local:2222/acme/widgets.git", "gitea.local", null, "acme", "widgets"],
    ["git@github.com:acme/widgets.git", "github.com", null, "acme", "widgets"],
    ["git@bitbucket.org:workspace/repo.git", "bitbucket.org", null, "workspace", "repo"],
    ["github.com:acme/widgets", "github.com", null, "acme", "widgets"],
    ["git://example.org/acme/widgets.git", "example.org", null, "acme", "widgets"],
    ["HTTPS://GitHub.COM/Acme/Widgets.GIT", "github.com", null, "Acme", "Widgets"],
    ["  git@github.com:acme/widgets.git  ", "github.com", null, "acme", "widgets"],
    ["https://[::1]:8443/a/b.git", "::1", 8443, "a", "b"],
    // The WHATWG URL parser resolves dot segments first.
    ["https://github.com/acme/./widgets", "github.com", null, "acme", "widgets"],
  ])("reads %s", (url, host, port, owner, name) => {
    expect(parseRepositoryUrl(url)).toEqual({ host, port, owner, name, path: `${owner}/${name}` });
  });

  it.each([
    "",
    "   ",
    "/tmp/conveyor-hello",
    "./relative/repo",
    "file:///srv/git/acme/widgets.git",
    "https://github.com/",
    "https://github.com/acme",
    "git@github.com:widgets.git",
    "https://github.com/acme/../widgets",
    "https://github.com/acme/wid gets",
    "https://github.com/acme/widgets?ref=main",
    "https://github.com/acme/widgets#main",
    "ftp://example.org/acme/widgets.git",
    "https://github.com/acme/%2e%2e",
    "https://github.com/acme/%ZZ",
    "not a url",
  ])("refuses %p", (url) => {
    expect(parseRepositoryUrl(url)).toBeNull();
  });

  it("refuses a URL longer than its bound", () => {
    expect(parseRepositoryUrl(`https://github.com/acme/${"w".repeat(3000)}`)).toBeNull();
  });
});

describe("repositoryHostOfApiUrl", () => {
  it.each([
    ["https://api.github.com", "github.com", null],
    ["https://api.bitbucket.org/2.0", "bitbucket.org", null],
    ["https://gitlab.com/api/v4", "gitlab.com", null],
    ["https://ghe.example.com/api/v3", "ghe.example.com", null],
    ["http://127.0.0.1:3000", "127.0.0.1", 3000],
    ["HTTP://Gitea.Example.com:8080/", "gitea.example.com", 8080],
  ])("%s serves %s", (apiUrl, host, port) => {
    expect(repositoryHostOfApiUrl(apiUrl)).toEqual({ host, port });
  });

  it("refuses what is not an http(s) URL", () => {
    expect(repositoryHostOfApiUrl("ssh://git@github.com")).toBeNull();
    expect(repositoryHostOfApiUrl("nope")).toBeNull();
  });
});

describe("connectionForRepository", () => {
  const github = { id: "gh", apiUrl: "https://api.github.com", createdAt: "2026-01-01T00:00:00.000Z" };
  const gitlab = { id: "gl", apiUrl: "https://gitlab.com/api/v4", createdAt: "2026-01-02T00:00:00.000Z" };
  const giteaA = { id: "ga", apiUrl: "http://127.0.0.1:3000", createdAt: "2026-01-03T00:00:00.000Z" };
  const giteaB = { id: "gb", apiUrl: "http://127.0.0.1:3001", createdAt: "2026-01-04T00:00:00.000Z" };
  const repo = (url: string) => {
    const location = parseRepositoryUrl(url);
    if (location === null) throw new Error(url);
    return location;
  };

  it("takes the connection whose API host serves the repository's host", () => {
    expect(connectionForRepository(repo("git@github.com:acme/w.git"), [gitlab, github])?.id).toBe("gh");
    expect(connectionForRepository(repo("https://gitlab.com/g/s/p.git"), [gitlab, github])?.id).toBe("gl");
  });

  it("is null when no connection serves the host", () => {
    expect(connectionForRepository(repo("https://bitbucket.org/w/r.git"), [gitlab, github])).toBeNull();
    expect(connectionForRepository(repo("https://github.com/a/b.git"), [])).toBeNull();
  });

  it("prefers the connection on the repository URL's port, else the oldest on the host", () => {
    expect(connectionForRepository(repo("http://127.0.0.1:3001/a/b.git"), [giteaA, giteaB])?.id).toBe("gb");
    expect(connectionForRepository(repo("http://127.0.0.1:3000/a/b.git"), [giteaB, giteaA])?.id).toBe("ga");
    // An ssh URL names no web port: the oldest connection on the host.
    expect(connectionForRepository(repo("git@127.0.0.1:a/b.git"), [giteaB, giteaA])?.id).toBe("ga");
    // A port no connection is on: the oldest on the host.
    expect(connectionForRepository(repo("http://127.0.0.1:9999/a/b.git"), [giteaB, giteaA])?.id).toBe("ga");
  });

  it("breaks a tie of creation times by id, so every replica chooses the same", () => {
    const a = { ...giteaA, id: "b" };
    const b = { ...giteaA, id: "a" };
    expect(connectionForRepository(repo("git@127.0.0.1:a/b.git"), [a, b])?.id).toBe("a");
  });

  it("ignores connections whose API URL cannot be read", () => {
    const broken = { id: "x", apiUrl: "not a url", createdAt: "2020-01-01T00:00:00.000Z" };
    expect(connectionForRepository(repo("git@github.com:a/b.git"), [broken, github])?.id).toBe("gh");
  });
});
