import { Client, PostPolicy } from "minio";
import type { S3Config } from "../config.js";

/** A signed multipart/form-data POST that uploads one object: the fields, then the file in `fileField`. */
export interface SignedForm {
  url: string;
  fields: Record<string, string>;
  fileField: string;
}

/** The S3 bucket that holds artifact contents. URLs are signed for `urlBase` (empty: the store's endpoint). */
export interface ObjectStore {
  readonly bucket: string;
  /** Creates the bucket when it does not exist yet; safe when several processes do it at once. */
  ensureBucket(): Promise<void>;
  /** A form whose policy pins the bucket, the key, the exact size, the content type and the expiry. */
  signUpload(
    spec: { key: string; size: number; contentType: string; expiresAt: Date },
    urlBase: string,
  ): Promise<SignedForm>;
  /** A GET URL carrying the access key id, the expiry and the signature, valid for `ttlS` seconds. */
  signDownload(key: string, ttlS: number, urlBase: string): Promise<string>;
  /** The object's size and the store's checksum of its bytes (its ETag), or undefined when there is no such object. */
  stat(key: string): Promise<{ size: number; etag: string } | undefined>;
  /** Removes objects; keys that name no object are fine. */
  remove(keys: readonly string[]): Promise<void>;
}

/** Where signed URLs point: an origin to sign for, and a path prefix put in front of the bucket afterwards. */
interface UrlBase {
  origin: URL;
  prefix: string;
}

/** Parses a URL base: "http://gateway:8080/objects" signs for the gateway's host and prefixes "/objects". */
function parseUrlBase(base: string): UrlBase {
  const url = new URL(base);
  return { origin: new URL(url.origin), prefix: url.pathname.replace(/\/+$/, "") };
}

/** Puts a path prefix in front of a signed URL's path (the proxy strips it again before the store sees it). */
function withPrefix(signed: string, prefix: string): string {
  if (prefix === "") return signed;
  const url = new URL(signed);
  return `${url.origin}${prefix}${url.pathname}${url.search}`;
}

function clientFor(origin: URL, config: S3Config): Client {
  return new Client({
    endPoint: origin.hostname.replace(/^\[|\]$/g, ""),
    port: Number(origin.port || (origin.protocol === "https:" ? 443 : 80)),
    useSSL: origin.protocol === "https:",
    accessKey: config.accessKey,
    secretKey: config.secretKey,
    // With the region given, signing never asks the server for the bucket's region: signer clients for public
    // addresses make no request at all.
    region: config.region,
    pathStyle: true,
  });
}

const NOT_FOUND = new Set(["NotFound", "NoSuchKey"]);

/** An S3 object store over the minio client (any S3-compatible server works). */
export function createS3ObjectStore(config: S3Config): ObjectStore {
  const storeBase = parseUrlBase(config.endpoint);
  const client = clientFor(storeBase.origin, config);
  // Signing clients by origin: the gateway sends one base (or two, with the proxy), so this stays tiny.
  const signers = new Map<string, Client>([[storeBase.origin.origin, client]]);
  const signerFor = (urlBase: string) => {
    const base = urlBase === "" ? storeBase : parseUrlBase(urlBase);
    let signer = signers.get(base.origin.origin);
    if (!signer) {
      signer = clientFor(base.origin, config);
      if (signers.size < 16) signers.set(base.origin.origin, signer);
    }
    return { signer, prefix: base.prefix };
  };
  return {
    bucket: config.bucket,
    async ensureBucket() {
      if (await client.bucketExists(config.bucket)) return;
      try {
        await client.makeBucket(config.bucket, config.region);
      } catch (err) {
        // Replicas starting together all find no bucket and all create it: whoever loses that race is told the
        // bucket exists (BucketAlreadyOwnedByYou, or BucketAlreadyExists on some servers), which is what it wanted.
        if (!(await client.bucketExists(config.bucket))) throw err;
      }
    },
    async signUpload(spec, urlBase) {
      const { signer, prefix } = signerFor(urlBase);
      const policy = new PostPolicy();
      policy.setBucket(config.bucket);
      policy.setKey(spec.key);
      policy.setContentType(spec.contentType);
      policy.setContentLengthRange(spec.size, spec.size);
      policy.setExpires(spec.expiresAt);
      const { postURL, formData } = await signer.presignedPostPolicy(policy);
      return { url: withPrefix(postURL, prefix), fields: formData, fileField: "file" };
    },
    async signDownload(key, ttlS, urlBase) {
      const { signer, prefix } = signerFor(urlBase);
      return withPrefix(await signer.presignedGetObject(config.bucket, key, ttlS), prefix);
    },
    async stat(key) {
      try {
        const stat = await client.statObject(config.bucket, key);
        return { size: stat.size, etag: stat.etag };
      } catch (err) {
        if (NOT_FOUND.has((err as { code?: string }).code ?? "")) return undefined;
        throw err;
      }
    },
    async remove(keys) {
      for (let i = 0; i < keys.length; i += 1000) {
        const results = await client.removeObjects(config.bucket, keys.slice(i, i + 1000));
        const failed = results.flatMap((r) => (r?.Error && !NOT_FOUND.has(r.Error.Code ?? "") ? [r.Error] : []));
        if (failed.length > 0) {
          throw new Error(`the store kept ${failed.length} objects: ${failed[0]?.Code} ${failed[0]?.Message ?? ""}`);
        }
      }
    },
  };
}
