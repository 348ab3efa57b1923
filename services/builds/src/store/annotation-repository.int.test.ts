import { MongoClient } from "mongodb";
import type { Annotation } from "../domain/annotations.js";
import { type AnnotationRepository, createMongoAnnotationRepository } from "./annotation-repository.js";

// The annotations repository over the real MongoDB-wire server: the unique (build, job, context) index, the
// version-guarded update, the list order and the count.
const dbName = `it_annotations_${Date.now()}`;
let mongo: MongoClient;
let repo: AnnotationRepository;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  repo = await createMongoAnnotationRepository(mongo.db(dbName));
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

let seq = 0;
function annotation(overrides: Partial<Annotation> = {}): Annotation {
  seq += 1;
  const at = new Date(Date.UTC(2026, 2, 1, 10, 0, seq));
  return {
    id: `00000000-0000-4000-8000-${String(seq).padStart(12, "0")}`,
    buildId: "b-1",
    jobId: null,
    scope: "build",
    context: `c-${seq}`,
    style: "info",
    priority: 3,
    body: "body",
    bodyHtml: "<p>body</p>",
    createdAt: at,
    updatedAt: at,
    version: 1,
    ...overrides,
  };
}

describe("the Mongo annotation repository", () => {
  it("stores one annotation per build, job and context, and finds it", async () => {
    const first = annotation({ buildId: "b-unique", context: "x.y" });
    expect(await repo.insert(first)).toBe(true);
    expect(await repo.insert(annotation({ buildId: "b-unique", context: "x.y" }))).toBe(false);
    expect(await repo.insert(annotation({ buildId: "b-unique", context: "x.y", jobId: "j-1", scope: "job" }))).toBe(
      true,
    );
    expect(await repo.find("b-unique", null, "x.y")).toEqual(first);
    expect(await repo.find("b-unique", "j-1", "x.y")).toMatchObject({ jobId: "j-1", scope: "job" });
    expect(await repo.find("b-unique", "j-2", "x.y")).toBeNull();
    expect(await repo.count("b-unique")).toBe(2);
  });

  it("updates only the version it read", async () => {
    const stored = annotation({ buildId: "b-cas" });
    await repo.insert(stored);
    const content = { style: "error" as const, priority: 8, body: "new", bodyHtml: "<p>new</p>" };
    const later = new Date(Date.UTC(2026, 2, 2));
    const updated = await repo.update(stored.id, 1, content, later);
    expect(updated).toEqual({ ...stored, ...content, updatedAt: later, version: 2 });
    expect(await repo.update(stored.id, 1, { ...content, body: "lost" }, later)).toBeNull();
    expect((await repo.find("b-cas", null, stored.context))?.body).toBe("new");
    // Content only: other fields handed in by mistake change nothing else.
    const stray = { ...content, body: "newer", jobId: null, buildId: "elsewhere" } as typeof content;
    await repo.update(stored.id, 2, stray, later);
    expect(await repo.find("b-cas", null, stored.context)).toMatchObject({ buildId: "b-cas", body: "newer" });
    expect(await repo.list("b-cas", null, 0, 10)).toHaveLength(1);
  });

  it("lists highest priority first, then oldest first, a page at a time", async () => {
    const low = annotation({ buildId: "b-list", priority: 1 });
    const old = annotation({ buildId: "b-list" });
    const high = annotation({ buildId: "b-list", priority: 10 });
    const young = annotation({ buildId: "b-list" });
    const jobs = annotation({ buildId: "b-list", jobId: "j-1", scope: "job" });
    for (const a of [young, low, jobs, high, old]) await repo.insert(a);
    expect((await repo.list("b-list", null, 0, 10)).map((a) => a.id)).toEqual([high.id, old.id, young.id, low.id]);
    expect((await repo.list("b-list", null, 1, 2)).map((a) => a.id)).toEqual([old.id, young.id]);
    expect((await repo.list("b-list", "j-1", 0, 10)).map((a) => a.id)).toEqual([jobs.id]);
  });

  it("removes by build, job and context", async () => {
    const stored = annotation({ buildId: "b-remove", context: "gone" });
    await repo.insert(stored);
    expect(await repo.remove("b-remove", "j-1", "gone")).toBe(false);
    expect(await repo.remove("b-remove", null, "gone")).toBe(true);
    expect(await repo.remove("b-remove", null, "gone")).toBe(false);
    expect(await repo.count("b-remove")).toBe(0);
  });
});
