import { placeChunk, placementEnd } from "./chunk-placement.js";

const span = (offset: number, size: number, sha256 = "a") => ({ offset, size, sha256 });

describe("placeChunk", () => {
  it("stores a chunk with nothing below its end, or only chunks that end at or before its offset", () => {
    expect(placeChunk(span(0, 10), null)).toEqual({ kind: "new" });
    expect(placeChunk(span(10, 10), span(0, 10))).toEqual({ kind: "new" });
    expect(placeChunk(span(20, 10), span(0, 10))).toEqual({ kind: "new" });
    expect(placeChunk(span(10, 0), span(5, 5))).toEqual({ kind: "new" });
  });

  it("takes the same chunk again at its offset, by size and hash (by size alone where no hash was recorded)", () => {
    expect(placeChunk(span(10, 5), span(10, 5))).toEqual({ kind: "stored" });
    expect(placeChunk(span(10, 5), span(10, 5, ""))).toEqual({ kind: "stored" });
    expect(placeChunk(span(10, 0), span(10, 0))).toEqual({ kind: "stored" });
  });

  it("refuses another chunk at a stored offset", () => {
    for (const stored of [span(10, 5, "b"), span(10, 6), span(10, 0)])
      expect(placeChunk(span(10, 5), stored)).toEqual({
        kind: "refused",
        reason: "Another chunk is already stored at offset 10",
      });
    expect(placeChunk(span(10, 0), span(10, 5)).kind).toBe("refused");
  });

  it("refuses a chunk that a stored one reaches into, or that reaches into a stored one", () => {
    const overlaps = { kind: "refused", reason: "The chunk at offset 10 overlaps a chunk already stored" };
    expect(placeChunk(span(10, 10), span(5, 6))).toEqual(overlaps);
    expect(placeChunk(span(10, 10), span(19, 5))).toEqual(overlaps);
    expect(placeChunk(span(10, 10), span(12, 0))).toEqual(overlaps);
    expect(placeChunk(span(10, 0), span(5, 6))).toEqual(overlaps);
  });

  it("looks below the chunk's end, or just past its offset when it is empty", () => {
    expect(placementEnd({ offset: 10, size: 5 })).toBe(15);
    expect(placementEnd({ offset: 10, size: 0 })).toBe(11);
  });
});
