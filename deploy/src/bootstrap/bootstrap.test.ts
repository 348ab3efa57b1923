import { Code, ConnectError } from "@connectrpc/connect";
import { type AdminUserClient, type ClusterClient, ensureCluster, findExistingUser } from "./bootstrap.js";

/** An agents service that knows some clusters of organization o1. */
function fakeAgents(existing: Array<{ id: string; name: string }>) {
  const clusters = [...existing];
  const created: string[] = [];
  let listed = 0;
  const client = {
    async getCluster(req: { organizationId: string; id: string }) {
      const c = clusters.find((x) => x.id === req.id && req.organizationId === "o1");
      if (!c) throw new ConnectError("cluster not found", Code.NotFound);
      return { cluster: { ...c, organizationId: "o1", description: "" } };
    },
    async listClusters(req: { organizationId: string }) {
      listed += 1;
      const mine = req.organizationId === "o1" ? clusters : [];
      return { clusters: mine.map((c) => ({ ...c, organizationId: "o1", description: "" })) };
    },
    async createCluster(req: { organizationId: string; name: string }) {
      if (clusters.some((x) => x.name === req.name)) throw new ConnectError("taken", Code.AlreadyExists);
      const c = { id: `c${clusters.length + 1}`, name: req.name };
      clusters.push(c);
      created.push(req.name);
      return { cluster: { ...c, organizationId: req.organizationId, description: "" } };
    },
  } as unknown as ClusterClient;
  return { client, created, listed: () => listed };
}

describe("ensureCluster", () => {
  it("creates Default when nothing is saved", async () => {
    const { client, created } = fakeAgents([]);
    expect(await ensureCluster(client, "o1", undefined)).toEqual({
      cluster: { id: "c1", name: "Default" },
      reused: false,
    });
    expect(created).toEqual(["Default"]);
  });

  it("reuses the saved cluster while it exists, whatever its name now", async () => {
    const { client, created } = fakeAgents([{ id: "c1", name: "Renamed" }]);
    expect(await ensureCluster(client, "o1", { id: "c1", name: "Default" })).toEqual({
      cluster: { id: "c1", name: "Renamed" },
      reused: true,
    });
    expect(created).toEqual([]);
  });

  it("creates Default again when the saved cluster is gone", async () => {
    const { client, created } = fakeAgents([]);
    const lines: string[] = [];
    const result = await ensureCluster(client, "o1", { id: "gone", name: "Default" }, (l) => lines.push(l));
    expect(result).toEqual({ cluster: { id: "c1", name: "Default" }, reused: false });
    expect(created).toEqual(["Default"]);
    expect(lines[0]).toBe('the saved cluster "Default" (gone) no longer exists');
  });

  it("finds and adopts an existing Default that credentials.json does not name", async () => {
    const { client, created, listed } = fakeAgents([
      { id: "c1", name: "Other" },
      { id: "c2", name: "Default" },
    ]);
    expect(await ensureCluster(client, "o1", undefined)).toEqual({
      cluster: { id: "c2", name: "Default" },
      reused: true,
    });
    expect(created).toEqual([]);
    expect(listed()).toBe(1);
  });

  it("finds Default when the saved cluster is gone but Default exists", async () => {
    const { client, created } = fakeAgents([{ id: "c7", name: "Default" }]);
    expect(await ensureCluster(client, "o1", { id: "gone" })).toEqual({
      cluster: { id: "c7", name: "Default" },
      reused: true,
    });
    expect(created).toEqual([]);
  });

  it("does not list clusters when it can create Default", async () => {
    const { client, listed } = fakeAgents([{ id: "c1", name: "Other" }]);
    expect((await ensureCluster(client, "o1", undefined)).cluster.name).toBe("Default");
    expect(listed()).toBe(0);
  });

  it("passes other errors on", async () => {
    const client = {
      getCluster: async () => {
        throw new ConnectError("down", Code.Unavailable);
      },
    } as unknown as ClusterClient;
    await expect(ensureCluster(client, "o1", { id: "c1" })).rejects.toThrow(/down/);
  });
});

describe("findExistingUser", () => {
  const jane = { id: "u1", email: "jane@example.com", name: "Jane" };
  /** An identity service whose getUser answers as `getUser` says, with jane as the organization's one member. */
  function fakeIdentity(getUser: (id: string) => Promise<{ user?: typeof jane }>) {
    let listed = 0;
    const client = {
      getUser: (req: { id: string }) => getUser(req.id),
      async listMembers() {
        listed += 1;
        return { members: [{ user: jane }], totalCount: 1 };
      },
    } as unknown as AdminUserClient;
    return { client, listed: () => listed };
  }

  it("takes the saved user when it is the one with the email", async () => {
    const { client, listed } = fakeIdentity(async () => ({ user: jane }));
    expect(await findExistingUser(client, jane.email, "o1", "u1")).toEqual(jane);
    expect(listed()).toBe(0);
  });

  it("looks among the members when the saved user no longer exists", async () => {
    const { client, listed } = fakeIdentity(async () => {
      throw new ConnectError("no user", Code.NotFound);
    });
    expect(await findExistingUser(client, jane.email, "o1", "gone")).toEqual(jane);
    expect(listed()).toBe(1);
  });

  it("passes on a failure to read the saved user instead of hiding it", async () => {
    const { client, listed } = fakeIdentity(async () => {
      throw new ConnectError("down", Code.Unavailable);
    });
    await expect(findExistingUser(client, jane.email, "o1", "u1")).rejects.toThrow(/down/);
    expect(listed()).toBe(0);
  });
});
