import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { effective, instructionsOf, lineageOf, parseDockerfile, stageOf } from "./dockerfile.js";

const repo = resolve(__dirname, "..", "..", "..");
const text = readFileSync(join(repo, "deploy", "Dockerfile"), "utf8");
const file = parseDockerfile(text);
const bake = readFileSync(join(repo, "deploy", "docker-bake.hcl"), "utf8");
const SERVICES = readdirSync(join(repo, "services")).sort();
/** The stages that are images (what docker-bake.hcl builds), not build steps. */
const IMAGES = ["service", "admin", "agent"];

describe("the Dockerfile reader", () => {
  it("joins continuation lines, drops comments and directives, and keeps the first line number", () => {
    const got = instructionsOf(
      "# syntax=docker/dockerfile:1\nFROM a AS b\n\nRUN one \\\n  # inside\n  && two\nuser 1000\n",
    );
    expect(got).toEqual([
      { keyword: "FROM", args: "a AS b", line: 2 },
      { keyword: "RUN", args: "one && two", line: 4 },
      { keyword: "USER", args: "1000", line: 7 },
    ]);
  });

  it("splits stages, keeps global ARGs, and follows a stage's bases for the effective USER", () => {
    const f = parseDockerfile(
      "ARG X=1\nFROM --platform=linux/amd64 img AS base\nUSER 1000\nFROM base AS app\nRUN x\nFROM img\n",
    );
    expect(f.globalArgs.map((a) => a.args)).toEqual(["X=1"]);
    expect(f.stages.map((s) => [s.name, s.from])).toEqual([
      ["base", "img"],
      ["app", "base"],
      ["2", "img"],
    ]);
    expect(lineageOf(f, "app").map((s) => s.name)).toEqual(["app", "base"]);
    expect(effective(f, "app", "USER")?.args).toBe("1000");
    expect(effective(f, "2", "USER")).toBeUndefined();
    expect(() => stageOf(f, "nope")).toThrow(/no stage nope; stages: base, app, 2/);
  });
});

describe("deploy/Dockerfile", () => {
  it.each(IMAGES)("image %s runs as an unprivileged numeric user", (image) => {
    const user = effective(file, image, "USER")?.args ?? "";
    expect(user).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
  });

  it.each(IMAGES)("image %s stops on SIGTERM and has a command", (image) => {
    expect(effective(file, image, "STOPSIGNAL")?.args).toBe("SIGTERM");
    expect(effective(file, image, "CMD") ?? effective(file, image, "ENTRYPOINT")).toBeDefined();
  });

  it("runs a service as node itself (PID 1 gets SIGTERM), whose main handles it, with a health check", () => {
    expect(effective(file, "service", "CMD")?.args).toBe('["node", "/app/main.js"]');
    expect(effective(file, "service", "HEALTHCHECK")?.args).toMatch(/CMD \["node", "\/app\/healthcheck.mjs"\]/);
    expect(readFileSync(join(repo, "packages", "runtime", "src", "process", "shutdown.ts"), "utf8")).toMatch(
      /"SIGTERM"/,
    );
    for (const service of SERVICES) {
      const main = readFileSync(join(repo, "services", service, "src", "main.ts"), "utf8");
      expect([service, /runService|onShutdown/.test(main)]).toEqual([service, true]);
    }
  });

  it("installs only production dependencies of the one service in its image", () => {
    const deps = stageOf(file, "deps").instructions.filter((i) => i.keyword === "RUN");
    expect(deps.some((i) => /--omit=dev/.test(i.args) && /--workspace "@conveyor\/\$\{SERVICE\}"/.test(i.args))).toBe(
      true,
    );
    const copies = stageOf(file, "service").instructions.filter((i) => i.keyword === "COPY");
    expect(copies.some((c) => c.args === "--from=deps /app/node_modules ./node_modules")).toBe(true);
    // Only the chosen service's code, not every service's.
    expect(copies.filter((c) => c.args.includes("/services")).map((c) => c.args)).toEqual([
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's build argument, as written there
      "--from=build /dist/services/${SERVICE} ./services/${SERVICE}",
    ]);
  });

  it("writes nothing outside /tmp at run time (a read-only root file system works)", () => {
    for (const image of ["service", "admin"]) {
      const env = lineageOf(file, image).flatMap((s) => s.instructions.filter((i) => i.keyword === "VOLUME"));
      expect(env).toEqual([]);
    }
    expect(text).not.toMatch(/--chown=0|USER root/);
  });

  it("names every workspace's package.json, so npm resolves each (a new service cannot be forgotten)", () => {
    const copies = [...stageOf(file, "build").instructions, ...stageOf(file, "manifests").instructions]
      .filter((i) => i.keyword === "COPY")
      .map((i) => i.args);
    for (const dir of [...SERVICES.map((s) => `services/${s}`), "proto", "deploy"]) {
      expect([dir, copies.some((c) => c.includes(`${dir}/package.json`))]).toEqual([dir, true]);
    }
    // The deps stage refuses a SERVICE it does not know: it must know every one.
    const known = /case "\$\{SERVICE\}" in ([\w|]+)\)/.exec(
      stageOf(file, "deps").instructions.find((i) => i.keyword === "RUN")?.args ?? "",
    )?.[1];
    expect(known?.split("|").sort()).toEqual(SERVICES);
  });

  it("copies from the build context only paths that exist", () => {
    for (const stage of file.stages) {
      for (const copy of stage.instructions.filter((i) => i.keyword === "COPY" && !i.args.includes("--from="))) {
        const sources = copy.args.split(/\s+/).slice(0, -1);
        for (const source of sources.filter((s) => s !== ".")) {
          expect([source, existsSync(join(repo, source))]).toEqual([source, true]);
        }
      }
    }
  });

  it("builds the agent with the launcher's build module, from the agent's own unmodified source", () => {
    const build = stageOf(file, "agent-build");
    expect(build.instructions.some((i) => i.keyword === "COPY" && i.args === "deploy/buildkite-agent/ ./")).toBe(true);
    expect(
      build.instructions.some(
        (i) => i.keyword === "RUN" && /go build .*github\.com\/buildkite\/agent\/v3/.test(i.args),
      ),
    ).toBe(true);
    expect(existsSync(join(repo, "deploy", "buildkite-agent", "go.mod"))).toBe(true);
    expect(effective(file, "agent", "ENTRYPOINT")?.args).toMatch(/tini.*buildkite-agent", "start"/);
  });

  it("is what docker-bake.hcl builds: every service, the admin and the agent image", () => {
    const matrix = /svc\s*=\s*\[([^\]]*)\]/.exec(bake)?.[1] ?? "";
    expect(
      matrix
        .split(",")
        .map((s) => s.trim().replace(/"/g, ""))
        .sort(),
    ).toEqual(SERVICES);
    for (const image of IMAGES) expect(bake).toMatch(new RegExp(`target\\s*=\\s*"${image}"`));
    expect(bake).toMatch(/dockerfile\s*=\s*"deploy\/Dockerfile"/);
  });
});
