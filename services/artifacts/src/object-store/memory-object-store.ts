import type { ObjectStore } from "./object-store.js";

/**
 * An in-memory ObjectStore for unit tests: objects are sizes by key (their ETag is given in `etags`, else derived
 * from the size); `failRemovals` simulates an outage.
 */
export function createMemoryObjectStore(bucket = "test-bucket") {
  const objects = new Map<string, number>();
  const etags = new Map<string, string>();
  const state = { failRemovals: false };
  const base = (urlBase: string) => (urlBase === "" ? "http://store.test" : urlBase);
  const store: ObjectStore = {
    bucket,
    async ensureBucket() {},
    async signUpload(spec, urlBase) {
      return {
        url: `${base(urlBase)}/${bucket}`,
        fields: { key: spec.key, policy: `size=${spec.size};expires=${spec.expiresAt.toISOString()}` },
        fileField: "file",
      };
    },
    async signDownload(key, ttlS, urlBase) {
      return `${base(urlBase)}/${bucket}/${key}?X-Amz-Credential=test&X-Amz-Expires=${ttlS}&X-Amz-Signature=sig`;
    },
    stat: async (key) => {
      const size = objects.get(key);
      return size === undefined ? undefined : { size, etag: etags.get(key) ?? `etag-${size}` };
    },
    async remove(keys) {
      if (state.failRemovals) throw new Error("store unavailable");
      for (const k of keys) objects.delete(k);
    },
  };
  return { store, objects, etags, state };
}
