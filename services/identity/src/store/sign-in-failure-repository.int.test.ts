import { MongoClient } from "mongodb";
import { createMongoSignInFailureRepository, type SignInFailureRepository } from "./sign-in-failure-repository.js";

// Runs against the stack's real MongoDB-wire server (FerretDB or mongod), in a throwaway database: the counts every
// identity replica shares.
const url = process.env.MONGODB_URL ?? "";
const dbName = `it_sign_in_failures_${Date.now()}`;
let client: MongoClient;
let repo: SignInFailureRepository;

beforeAll(async () => {
  client = await new MongoClient(url, { maxPoolSize: 25 }).connect();
  repo = await createMongoSignInFailureRepository(client.db(dbName));
});

afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const window = { start: new Date("2026-03-01T10:00:00Z"), end: new Date("2026-03-01T10:15:00Z") };
const next = { start: window.end, end: new Date("2026-03-01T10:30:00Z") };

describe("MongoDB sign-in failure counts", () => {
  it("counts per key and window, and takes a count back", async () => {
    expect(await repo.add("account:a", window, 1)).toBe(1);
    expect(await repo.add("account:a", window, 1)).toBe(2);
    expect(await repo.add("account:b", window, 1)).toBe(1);
    expect(await repo.add("account:a", next, 1)).toBe(1);
    expect(await repo.add("account:a", window, -1)).toBe(1);
  });

  it("loses no count when the first failures of a window race (another replica's included)", async () => {
    const other = await createMongoSignInFailureRepository(client.db(dbName));
    const counts = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? repo : other).add("address:race", window, 1)),
    );
    expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("deletes the counts of ended windows only", async () => {
    await repo.add("account:old", window, 1);
    await repo.add("account:new", next, 1);
    await repo.deleteEnded(window.end);
    expect(await repo.add("account:old", window, 1)).toBe(1);
    expect(await repo.add("account:new", next, 1)).toBe(2);
  });
});
