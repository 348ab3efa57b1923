import { isFullSha, parseCommitReport, resolveCommit } from "./commit-report.js";

const SHA = "8e898afcb15d34da2859ce3433f5c889514c449a";
const OTHER = "0123456789abcdef0123456789abcdef01234567";
// What `git log -1 --format="commit %H%nabbrev-commit %h%nAuthor: %an <%ae>%n%n%w(0,4,4)%B"` prints.
const report = (sha: string) =>
  `commit ${sha}\nabbrev-commit ${sha.slice(0, 7)}\nAuthor: Jane Doe <j@x.org>\n\n    Subject line\n    \n    Body line one\n      indented\n\n`;

describe("isFullSha", () => {
  it.each([
    [SHA, true],
    ["a".repeat(64), true],
    ["HEAD", false],
    ["main", false],
    [SHA.slice(0, 12), false],
    [SHA.toUpperCase(), false],
  ])("%s is %s", (commit, full) => expect(isFullSha(commit)).toBe(full));
});

describe("parseCommitReport", () => {
  it("reads the SHA and the whole message without its indent", () => {
    expect(parseCommitReport(report(SHA))).toEqual({ sha: SHA, message: "Subject line\n\nBody line one\n  indented" });
  });

  it("reads a report with Windows line ends", () => {
    expect(parseCommitReport(report(SHA).replace(/\n/g, "\r\n"))?.message).toBe(
      "Subject line\n\nBody line one\n  indented",
    );
  });

  it("gives an empty message when the report has no body", () => {
    expect(parseCommitReport(`commit ${SHA}\nabbrev-commit 8e898af`)).toEqual({ sha: SHA, message: "" });
  });

  it.each(["", "HEAD", `commit ${SHA.slice(0, 10)}\n`, `sha ${SHA}\n`])("refuses %j", (value) => {
    expect(parseCommitReport(value)).toBeNull();
  });
});

describe("resolveCommit", () => {
  it("gives a build made for a ref the reported SHA and, when it had none, the message", () => {
    expect(resolveCommit({ commit: "HEAD", message: "" }, report(SHA))).toEqual({
      kind: "resolve",
      update: { commit: SHA, message: "Subject line\n\nBody line one\n  indented" },
    });
  });

  it("keeps a message the build was created with", () => {
    expect(resolveCommit({ commit: "main", message: "Mine" }, report(SHA))).toEqual({
      kind: "resolve",
      update: { commit: SHA },
    });
  });

  it("leaves a build whose commit is already that SHA as it is", () => {
    expect(resolveCommit({ commit: SHA, message: "" }, report(SHA))).toEqual({ kind: "unchanged" });
  });

  it("ignores, saying why, a report of another commit once the build's commit is a full SHA", () => {
    expect(resolveCommit({ commit: SHA, message: "x" }, report(OTHER))).toEqual({
      kind: "ignored",
      reason: `the build's commit is already ${SHA}`,
    });
  });

  it("ignores a report it cannot read", () => {
    expect(resolveCommit({ commit: "HEAD", message: "" }, "nonsense").kind).toBe("ignored");
  });
});
