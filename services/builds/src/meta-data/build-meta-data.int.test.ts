import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages } from "@conveyor/runtime";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";

// Build meta-data as agents set and read it, through the Connect client over the real MongoDB-wire server.
const databases = testDatabases("it_build_meta");

let client: Client;
/** A second service over the same database, as a second process of the builds service would be. */
let twin: Client;

beforeAll(async () => {
  await databases.connect();
  const db = databases.create();
  ({ client } = await openBuildsService(db));
  ({ client: twin } = await openBuildsService(db));
});
afterAll(() => databases.close());

async function newBuild(metaData: Record<string, string> = {}) {
  const pipeline = create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "meta",
    name: "Meta",
    defaultBranch: "main",
    steps: stepMessages([{ type: "script", name: "a", command: "echo a", agent_query_rules: [] }]),
  });
  const { build } = await client.createBuild({ pipeline, commit: "abc", branch: "main", metaData });
  return { buildId: build?.id ?? "", pipelineId: pipeline.id, number: build?.number ?? 0 };
}

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

const keysOf = async (buildId: string) => (await client.listBuildMetaDataKeys({ buildId })).keys.sort();

describe("build meta-data", () => {
  it("sets, reads and lists keys, beside the meta-data the build was created with", async () => {
    const { buildId, pipelineId, number } = await newBuild({ "release.version": "1.2" });
    await client.setBuildMetaData({
      buildId,
      items: [
        { key: "env", value: "prod" },
        { key: "notes", value: "multi\nline \u00e9" },
        { key: "empty", value: "" },
      ],
    });
    await client.setBuildMetaData({ buildId, items: [{ key: "env", value: "staging" }] });
    expect(await client.getBuildMetaData({ buildId, key: "env" })).toMatchObject({ exists: true, value: "staging" });
    expect(await client.getBuildMetaData({ buildId, key: "notes" })).toMatchObject({
      exists: true,
      value: "multi\nline \u00e9",
    });
    expect(await client.getBuildMetaData({ buildId, key: "empty" })).toMatchObject({ exists: true, value: "" });
    expect(await client.getBuildMetaData({ buildId, key: "release.version" })).toMatchObject({
      exists: true,
      value: "1.2",
    });
    expect(await client.getBuildMetaData({ buildId, key: "missing" })).toMatchObject({ exists: false, value: "" });
    expect(await client.getBuildMetaData({ buildId, key: "toString" })).toMatchObject({ exists: false, value: "" });
    expect(await keysOf(buildId)).toEqual(["empty", "env", "notes", "release.version"]);
    const { build } = await client.getBuild({ pipelineId, number });
    expect(build?.metaData).toEqual({
      "release.version": "1.2",
      env: "staging",
      notes: "multi\nline \u00e9",
      empty: "",
    });
  });

  it("sets all items or none: one invalid key leaves the build's meta-data as it was", async () => {
    const { buildId } = await newBuild({ kept: "1" });
    const invalid: Array<[string, string]> = [
      ["blank", "   "],
      ["empty", ""],
      ["control character", "a\nb"],
      ["over 255 characters", "k".repeat(256)],
    ];
    for (const [name, key] of invalid) {
      const call = client.setBuildMetaData({
        buildId,
        items: [
          { key: "good", value: "1" },
          { key: "kept", value: "changed" },
          { key, value: "v" },
        ],
      });
      expect([name, await codeOf(call)]).toEqual([name, Code.InvalidArgument]);
    }
    expect(await keysOf(buildId)).toEqual(["kept"]);
    expect((await client.getBuildMetaData({ buildId, key: "kept" })).value).toBe("1");
  });

  it("bounds keys at 255 characters and values at 100 KiB", async () => {
    const { buildId } = await newBuild();
    const longest = "k".repeat(255);
    const largest = "v".repeat(100 * 1024);
    await client.setBuildMetaData({ buildId, items: [{ key: longest, value: largest }] });
    expect((await client.getBuildMetaData({ buildId, key: longest })).value).toBe(largest);
    expect(await codeOf(client.setBuildMetaData({ buildId, items: [{ key: "big", value: `${largest}v` }] }))).toBe(
      Code.InvalidArgument,
    );
    // Bytes, not characters: 51,201 two-byte characters are over the limit.
    expect(
      await codeOf(client.setBuildMetaData({ buildId, items: [{ key: "wide", value: "\u00e9".repeat(51_201) }] })),
    ).toBe(Code.InvalidArgument);
    expect(await keysOf(buildId)).toEqual([longest]);
  });

  it("holds at most 1000 keys per build", async () => {
    const { buildId } = await newBuild({ created: "yes" });
    const items = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ key: `key-${from + i}`, value: String(from + i) }));
    expect(await codeOf(client.setBuildMetaData({ buildId, items: items(0, 1000) }))).toBe(Code.InvalidArgument);
    expect(await keysOf(buildId)).toEqual(["created"]);
    await client.setBuildMetaData({ buildId, items: items(0, 500) });
    await client.setBuildMetaData({ buildId, items: items(500, 499) });
    expect(await keysOf(buildId)).toHaveLength(1000);
    expect(await codeOf(client.setBuildMetaData({ buildId, items: items(999, 1) }))).toBe(Code.InvalidArgument);
    // Changing keys it has is still possible at the limit.
    await client.setBuildMetaData({ buildId, items: [{ key: "key-3", value: "three" }] });
    expect((await client.getBuildMetaData({ buildId, key: "key-3" })).value).toBe("three");
    expect(await client.getBuildMetaData({ buildId, key: "key-999" })).toMatchObject({ exists: false });
    expect(await keysOf(buildId)).toHaveLength(1000);
  });

  it("holds at most 1 MiB of keys and values per build, refused as invalid rather than failing to store", async () => {
    const { buildId } = await newBuild();
    const value = "v".repeat(100 * 1024);
    const batch = (from: number) => Array.from({ length: 5 }, (_, i) => ({ key: `big-${from + i}`, value }));
    await client.setBuildMetaData({ buildId, items: batch(0) });
    await client.setBuildMetaData({ buildId, items: batch(5) });
    // Eleven values of 100 KiB are past 1 MiB.
    expect(await codeOf(client.setBuildMetaData({ buildId, items: batch(10) }))).toBe(Code.InvalidArgument);
    expect(await keysOf(buildId)).toHaveLength(10);
  });

  it("loses no key when different keys are set at once, from one process or two", async () => {
    const { buildId } = await newBuild();
    const keys = Array.from({ length: 24 }, (_, i) => `step-${i}`);
    await Promise.all(
      keys.map((key, i) => (i % 2 === 0 ? client : twin).setBuildMetaData({ buildId, items: [{ key, value: key }] })),
    );
    expect(await keysOf(buildId)).toEqual([...keys].sort());
    for (const key of keys) expect((await client.getBuildMetaData({ buildId, key })).value).toBe(key);
  });

  it("answers NotFound for an unknown build", async () => {
    const buildId = randomUUID();
    expect(await codeOf(client.setBuildMetaData({ buildId, items: [{ key: "a", value: "b" }] }))).toBe(Code.NotFound);
    expect(await codeOf(client.getBuildMetaData({ buildId, key: "a" }))).toBe(Code.NotFound);
    expect(await codeOf(client.listBuildMetaDataKeys({ buildId }))).toBe(Code.NotFound);
    expect(await codeOf(client.listBuildMetaDataKeys({ buildId: "" }))).toBe(Code.NotFound);
  });
});
