/**
 * True for MongoDB's duplicate key error (code 11000), however the driver wraps it. FerretDB v1 answers an update or
 * findAndModify that breaks a unique index with InternalError (code 1) and SQLite's message instead (inserts get
 * 11000): that is a duplicate key too, or concurrent renames to one name end as 500s instead of 422s.
 */
export function isDuplicateKeyError(err: unknown): boolean {
  if (typeof err !== "object" || err === null || !("code" in err)) return false;
  const { code, message } = err as { code: unknown; message?: unknown };
  if (code === 11000) return true;
  return code === 1 && typeof message === "string" && message.includes("UNIQUE constraint failed: index ");
}
