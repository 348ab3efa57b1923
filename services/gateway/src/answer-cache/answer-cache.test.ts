import { gunzipSync } from "node:zlib";
import { Type } from "@sinclair/typebox";
import Fastify from "fastify";
import { createAnswerCache, type Fetched, inputsOf } from "./answer-cache.js";

/** A builds service that versions one value and honours if_none_match, and a route that serves it. */
async function world(
  opts: {
    maxBytes?: number;
    confirm?: () => boolean;
    renderGate?: () => Promise<void>;
    value?: string;
    gzipMinBytes?: number;
  } = {},
) {
  const service = { value: opts.value ?? "one", version: "v1", asked: [] as string[] };
  const gateway = { inputs: "acme|p1", renders: 0 };
  const answers = createAnswerCache({
    maxBytes: opts.maxBytes ?? 1024 * 1024,
    ...(opts.gzipMinBytes !== undefined ? { gzipMinBytes: opts.gzipMinBytes } : {}),
  });
  const app = Fastify();
  app.get(
    "/thing",
    { schema: { response: { 200: Type.Object({ value: Type.String(), inputs: Type.String() }) } } },
    async (request, reply) =>
      answers.serve(request, reply, {
        key: "thing",
        inputs: gateway.inputs,
        fetch: async (ifNoneMatch): Promise<Fetched<string>> => {
          service.asked.push(ifNoneMatch);
          if (ifNoneMatch === service.version) return { version: service.version, notModified: true };
          return { version: service.version, notModified: false, value: service.value };
        },
        ...(opts.confirm ? { confirm: async () => opts.confirm?.() ?? true } : {}),
        render: async (value) => {
          gateway.renders++;
          await opts.renderGate?.();
          return { body: { value, inputs: gateway.inputs, extra: "dropped by the schema" }, link: "<next>" };
        },
      }),
  );
  await app.ready();
  const get = (headers: Record<string, string> = {}) => app.inject({ method: "GET", url: "/thing", headers });
  return { app, service, gateway, answers, get };
}

describe("the answer cache", () => {
  it("makes requests that arrive during a rendering wait for it, then confirm its version", async () => {
    let open: () => void = () => {};
    let gate: Promise<void> | undefined;
    const w = await world({ renderGate: () => gate ?? Promise.resolve() });
    await w.get();
    w.service.value = "two";
    w.service.version = "v2";
    gate = new Promise((resolve) => (open = resolve));
    const first = w.get();
    while (w.gateway.renders < 2) await new Promise((r) => setImmediate(r));
    // Rendering v2 now: three more requests arrive.
    const later = [w.get(), w.get(), w.get()];
    await new Promise((r) => setTimeout(r, 20));
    expect(w.service.asked).toEqual(["", "v1"]);
    open();
    const answers = await Promise.all([first, ...later]);
    for (const res of answers) expect(res.json()).toEqual({ value: "two", inputs: "acme|p1" });
    expect(w.gateway.renders).toBe(2);
    // Each later request asked the service itself, after the rendering, naming the new version.
    expect(w.service.asked).toEqual(["", "v1", "v2", "v2", "v2"]);
  });

  it("renders once, then serves the kept JSON while the service confirms its version", async () => {
    const w = await world();
    const first = await w.get();
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ value: "one", inputs: "acme|p1" });
    expect(first.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(first.headers.link).toBe("<next>");
    const again = await w.get();
    expect(again.body).toBe(first.body);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers.link).toBe("<next>");
    expect(w.gateway.renders).toBe(1);
    expect(w.service.asked).toEqual(["", "v1"]);
  });

  it("renders the service's new answer when its version changed", async () => {
    const w = await world();
    const first = await w.get();
    w.service.value = "two";
    w.service.version = "v2";
    const changed = await w.get();
    expect(changed.json().value).toBe("two");
    expect(changed.headers.etag).not.toBe(first.headers.etag);
    expect(w.gateway.renders).toBe(2);
    expect(w.service.asked).toEqual(["", "v1"]);
  });

  it("does not offer a kept answer rendered with other inputs", async () => {
    const w = await world();
    await w.get();
    w.gateway.inputs = "acme|p2";
    const res = await w.get();
    expect(res.json().inputs).toBe("acme|p2");
    expect(w.service.asked).toEqual(["", ""]);
    expect(w.gateway.renders).toBe(2);
  });

  it("asks again for the value when inputs read from the answer changed", async () => {
    let same = true;
    const w = await world({ confirm: () => same });
    await w.get();
    await w.get();
    expect(w.gateway.renders).toBe(1);
    same = false;
    await w.get();
    expect(w.service.asked).toEqual(["", "v1", "v1", ""]);
    expect(w.gateway.renders).toBe(2);
  });

  it("answers 304 to an If-None-Match naming the answer, whether kept or rendered anew", async () => {
    const w = await world();
    const first = await w.get();
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    const kept = await w.get({ "if-none-match": etag });
    expect(kept.statusCode).toBe(304);
    expect(kept.body).toBe("");
    expect((await w.get({ "if-none-match": `"other", W/${etag}` })).statusCode).toBe(304);
    expect((await w.get({ "if-none-match": '"other"' })).statusCode).toBe(200);
    // Another gateway (nothing kept) names the same answer with the same tag.
    const other = await world({ maxBytes: 0 });
    const fresh = await other.get({ "if-none-match": etag });
    expect(fresh.statusCode).toBe(304);
    w.service.version = "v2";
    expect((await w.get({ "if-none-match": etag })).statusCode).toBe(200);
  });

  it("keeps nothing with no room, and nothing the service did not version", async () => {
    const none = await world({ maxBytes: 0 });
    await none.get();
    await none.get();
    expect(none.gateway.renders).toBe(2);
    expect(none.answers.size().entries).toBe(0);
    const unversioned = await world();
    unversioned.service.version = "";
    await unversioned.get();
    const res = await unversioned.get();
    expect(res.headers.etag).toBeUndefined();
    expect(unversioned.answers.size().entries).toBe(0);
    expect(unversioned.gateway.renders).toBe(2);
  });

  it("keeps no answer larger than its room", async () => {
    const w = await world({ maxBytes: 100 });
    await w.get();
    expect(w.answers.size().entries).toBe(0);
    expect(inputsOf(["a", 1, true])).toBe("a|1|true");
  });

  describe("gzip", () => {
    const long = "build ".repeat(2000);
    const gzipped = { "accept-encoding": "gzip, deflate, br" };

    it("sends a client that accepts gzip the kept JSON gzipped, compressed once, with a weak ETag", async () => {
      const w = await world({ value: long });
      const plain = await w.get();
      expect(plain.headers["content-encoding"]).toBeUndefined();
      expect(plain.headers.vary).toBe("accept-encoding");
      const before = w.answers.size().bytes;
      const first = await w.get(gzipped);
      expect(first.statusCode).toBe(200);
      expect(first.headers["content-encoding"]).toBe("gzip");
      expect(first.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(first.headers.vary).toBe("accept-encoding");
      expect(first.headers.etag).toBe(`W/${plain.headers.etag}`);
      expect(first.headers.link).toBe("<next>");
      const body = first.rawPayload;
      expect(Number(first.headers["content-length"])).toBe(body.length);
      expect(body.length).toBeLessThan(plain.rawPayload.length / 10);
      expect(gunzipSync(body).equals(plain.rawPayload)).toBe(true);
      // Kept beside the JSON and counted in the cache's size.
      expect(w.answers.size().bytes).toBe(before + body.length);
      const again = await w.get(gzipped);
      expect(again.rawPayload.equals(body)).toBe(true);
      expect(w.answers.size().bytes).toBe(before + body.length);
      expect(w.gateway.renders).toBe(1);
    });

    it("gzips a new rendering too, and a new version's answer afresh", async () => {
      const w = await world({ value: long });
      const first = await w.get(gzipped);
      expect(first.headers["content-encoding"]).toBe("gzip");
      expect(JSON.parse(gunzipSync(first.rawPayload).toString()).value).toBe(long);
      w.service.value = `${long}changed`;
      w.service.version = "v2";
      const changed = await w.get(gzipped);
      expect(JSON.parse(gunzipSync(changed.rawPayload).toString()).value).toBe(`${long}changed`);
      expect(changed.headers.etag).not.toBe(first.headers.etag);
    });

    it("sends plain JSON when gzip is refused, absent or not offered", async () => {
      const w = await world({ value: long });
      for (const header of ["gzip;q=0, identity", "identity", "br", ""]) {
        const res = await w.get({ "accept-encoding": header });
        expect(res.headers["content-encoding"]).toBeUndefined();
        expect(res.json().value).toBe(long);
        expect(res.headers.etag).toMatch(/^"/);
      }
      expect((await w.get({ "accept-encoding": "*" })).headers["content-encoding"]).toBe("gzip");
    });

    it("answers 304 to either form of the ETag, whichever encoding is asked for", async () => {
      const w = await world({ value: long });
      const weak = String((await w.get(gzipped)).headers.etag);
      const strong = weak.slice(2);
      for (const [tag, headers] of [
        [weak, gzipped],
        [strong, gzipped],
        [weak, {}],
        [strong, {}],
      ] as const) {
        const res = await w.get({ ...headers, "if-none-match": tag });
        expect(res.statusCode).toBe(304);
        expect(res.body).toBe("");
      }
    });

    it("leaves small answers alone, and gzips unkept answers per request", async () => {
      const small = await world();
      const res = await small.get(gzipped);
      expect(res.headers["content-encoding"]).toBeUndefined();
      expect(res.headers.vary).toBeUndefined();
      expect(res.json().value).toBe("one");
      const unkept = await world({ value: long, maxBytes: 0 });
      for (let i = 0; i < 2; i++) {
        const answer = await unkept.get(gzipped);
        expect(answer.headers["content-encoding"]).toBe("gzip");
        expect(JSON.parse(gunzipSync(answer.rawPayload).toString()).value).toBe(long);
      }
      expect(unkept.gateway.renders).toBe(2);
    });
  });
});
