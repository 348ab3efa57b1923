import { randomUUID } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { encodeFence, FENCES_STREAM, type Fences, openFences } from "./version-fences.js";

// Against the stack's real nats-server with JetStream.
let nc: NatsConnection;
let fences: Fences;
beforeAll(async () => {
  nc = await connect({ servers: process.env.NATS_URL ?? "" });
  fences = await openFences(nc);
});
afterAll(() => nc.drain());

const key = () => `it.${randomUUID()}`;

describe("fences on JetStream", () => {
  it("reads 0 for a key never raised, and a raised fence from any process", async () => {
    const k = key();
    expect(await fences.read(k)).toBe(0);
    await fences.raise(k, 3);
    expect(await fences.read(k)).toBe(3);
    const other = await openFences(nc);
    expect(await other.read(k)).toBe(3);
  });

  it("never lowers a fence, and keeps one message per key", async () => {
    const k = key();
    await fences.raise(k, 5);
    await fences.raise(k, 2);
    await fences.raise(k, 5);
    expect(await fences.read(k)).toBe(5);
    await fences.raise(k, 6);
    expect(await fences.read(k)).toBe(6);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(FENCES_STREAM, { subjects_filter: `fences.${k}` });
    expect(info.state.subjects?.[`fences.${k}`]).toBe(1);
  });

  it("ends concurrent raises at the highest, whatever order they land in", async () => {
    const k = key();
    const targets = Array.from({ length: 12 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    await Promise.all(targets.map((n) => fences.raise(k, n)));
    expect(await fences.read(k)).toBe(12);
  });

  it("refuses a publish on top of a message it did not read: a late raise cannot overwrite a higher one", async () => {
    const k = key();
    await fences.raise(k, 1);
    const jsm = await jetstreamManager(nc);
    const first = await jsm.streams.getMessage(FENCES_STREAM, { last_by_subj: `fences.${k}` });
    await fences.raise(k, 9);
    // What a raise to 4 that read the first message and landed late would send.
    await expect(
      jetstream(nc).publish(`fences.${k}`, encodeFence(4), { expect: { lastSubjectSequence: first?.seq ?? 0 } }),
    ).rejects.toThrow(/wrong last sequence/i);
    expect(await fences.read(k)).toBe(9);
  });

  it("refuses keys that are not subject tokens", async () => {
    for (const bad of ["", "a b", "a.*", "a.>", "a..b"])
      await expect(fences.read(bad)).rejects.toThrow(/invalid fence key/);
  });
});
