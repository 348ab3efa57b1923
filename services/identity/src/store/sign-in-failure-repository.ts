import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** The count of failed sign-ins of one key (domain/sign-in-limits.ts) in one window, shared by identity replicas. */
export interface SignInFailureDoc {
  /** `<key>@<window start, ISO>`. */
  _id: string;
  count: number;
  /** The end of the window: the count means nothing after it. */
  until: Date;
}

/** Persistence of failed sign-in counts. */
export interface SignInFailureRepository {
  /** Adds `delta` to a key's count in the window from `start` to `until`; returns the count afterwards. */
  add(key: string, window: { start: Date; end: Date }, delta: number): Promise<number>;
  /** Deletes the counts of windows ended at `now`. */
  deleteEnded(now: Date): Promise<void>;
}

/** The id of a key's count in a window. */
export const failureCountId = (key: string, start: Date) => `${key}@${start.toISOString()}`;

/** The MongoDB implementation; creates its index before returning. */
export async function createMongoSignInFailureRepository(db: Db): Promise<SignInFailureRepository> {
  const failures: Collection<SignInFailureDoc> = db.collection("sign_in_failures");
  await failures.createIndex({ until: 1 }, { name: "window_end" });
  const add = (key: string, window: { start: Date; end: Date }, delta: number) =>
    failures.findOneAndUpdate(
      { _id: failureCountId(key, window.start) },
      { $inc: { count: delta }, $setOnInsert: { until: window.end } },
      { upsert: true, returnDocument: "after" },
    );
  return {
    async add(key, window, delta) {
      try {
        return (await add(key, window, delta))?.count ?? 0;
      } catch (err) {
        // Two first failures of a window raced to insert its count: the loser's increment goes to the winner's.
        if (!isDuplicateKeyError(err)) throw err;
        return (await add(key, window, delta))?.count ?? 0;
      }
    },
    async deleteEnded(now) {
      await failures.deleteMany({ until: { $lte: now } });
    },
  };
}
