import { ENV_LIMITS, envProblems, textProblem } from "./text-limits.js";

describe("textProblem", () => {
  it("takes text within its bound", () => {
    expect(textProblem("Web App", { max: 255 })).toBeNull();
    expect(textProblem("a".repeat(255), { max: 255 })).toBeNull();
    expect(textProblem("line one\n\tline two\r\n", { max: 100, multiline: true })).toBeNull();
  });

  it("refuses text over its bound, in characters or bytes", () => {
    expect(textProblem("a".repeat(256), { max: 255 })).toBe("is too long (maximum is 255 characters)");
    expect(textProblem("é".repeat(600), { max: 1000, bytes: true })).toBe("is too long (maximum is 1,000 bytes)");
  });

  it("refuses NUL and control characters; multi-line text keeps tabs and line breaks only", () => {
    expect(textProblem("main\u0000", { max: 255 })).toBe("must not contain NUL characters");
    expect(textProblem("a\nb", { max: 255 })).toBe("must not contain control characters");
    expect(textProblem("a\u001b[31mred", { max: 255, multiline: true })).toBe("must not contain control characters");
    expect(textProblem("a\u0085", { max: 255, multiline: true })).toBe("must not contain control characters");
    expect(textProblem("a\u0000", { max: 255, multiline: true })).toBe("must not contain NUL characters");
  });
});

describe("envProblems", () => {
  it("takes shell-style names and string values", () => {
    expect(envProblems({ A: "1", _B2: "", LONG: "x".repeat(ENV_LIMITS.maxValueBytes) }, "env")).toEqual([]);
  });

  it('refuses "", "A=B" and names with NUL, as a process environment cannot hold them', () => {
    expect(envProblems({ "": "x", "A=B": "y", "A\u0000": "z", "1A": "w" }, "env")).toEqual([
      { field: "env.", code: "is not a valid environment variable name" },
      { field: "env.A=B", code: "is not a valid environment variable name" },
      { field: "env.A?", code: "is not a valid environment variable name" },
      { field: "env.1A", code: "is not a valid environment variable name" },
    ]);
  });

  it("refuses values with NUL, values over 64 KiB, and non-strings", () => {
    expect(envProblems({ A: "a\u0000b", B: "x".repeat(ENV_LIMITS.maxValueBytes + 1), C: 1 }, "env")).toEqual([
      { field: "env.A", code: "must not contain NUL characters" },
      { field: "env.B", code: "is too long (maximum is 65536 bytes)" },
      { field: "env.C", code: "must be a string" },
    ]);
  });

  it("refuses more than 500 variables at once, without a problem per key", () => {
    const env = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`K${i}`, "v"]));
    expect(envProblems(env, "env")).toEqual([
      { field: "env", code: "has too many variables (maximum is 500, got 50000)" },
    ]);
  });

  it("refuses names over 255 characters and maps over 256 KiB in all", () => {
    expect(envProblems({ [`A${"B".repeat(255)}`]: "x" }, "env")[0]?.code).toBe(
      "is too long a variable name (maximum is 255 characters)",
    );
    const env = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`K${i}`, "x".repeat(60 * 1024)]));
    expect(envProblems(env, "env")).toEqual([
      { field: "env", code: "is too large (maximum is 262144 bytes of names and values)" },
    ]);
  });
});

describe('envProblems with names: "any"', () => {
  it("takes any name an environment can hold (dots included), and still refuses empty, = and control characters", () => {
    expect(envProblems({ "A.B": "x", "a-b": "y" }, "env", { names: "any" })).toEqual([]);
    expect(envProblems({ "": "x", "A=B": "y", "A\t": "z" }, "env", { names: "any" }).map((p) => p.field)).toEqual([
      "env.",
      "env.A=B",
      "env.A?",
    ]);
  });
});
