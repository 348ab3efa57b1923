// Jest runs the TypeScript sources directly (transformed by SWC to CommonJS): no build is needed for unit tests.
// Type checking is a separate step (`turbo run typecheck`) in `npm test`.

const swc = (syntax) => [
  "@swc/jest",
  { jsc: { parser: { syntax }, target: "es2022" }, module: { type: "commonjs" }, sourceMaps: "inline" },
];

/**
 * Dependencies that ship only ES modules (Node's require(esm) loads them in production, Jest's module system does
 * not): cookie@2, used by Fastify's inject().
 */
const ESM_ONLY_DEPENDENCIES = ["cookie", "ansi_up"];

/** @type {import('jest').Config['transform']} */
const transform = {
  "^.+\\.ts$": swc("typescript"),
  [`/node_modules/(${ESM_ONLY_DEPENDENCIES.join("|")})/.+\\.js$`]: swc("ecmascript"),
};

/**
 * Imports as written for Node's ESM resolution resolve to the TypeScript sources: `./x.js` to `./x.ts`,
 * `@conveyor/proto/<name>` to proto/src/<name>.ts, `@conveyor/builds/testing` (the builds service in memory, for
 * other services' unit tests) to services/builds/src/testing.ts, `@conveyor/<package>/testing` (a package's fakes for
 * unit tests) to packages/<package>/src/testing.ts, `@conveyor/deploy` and every `@conveyor/<package>` of packages/
 * to their src/index.ts. (test/setup/global-setup.ts maps the packages' imports the same way for Jest's
 * global setup, which imports no testing entry.)
 */
const moduleNameMapper = {
  "^(\\.{1,2}/.*)\\.js$": "$1",
  "^@conveyor/proto/(.*)$": "<rootDir>/proto/src/$1.ts",
  "^@conveyor/builds/testing$": "<rootDir>/services/builds/src/testing.ts",
  "^@conveyor/([\\w-]+)/testing$": "<rootDir>/packages/$1/src/testing.ts",
  "^@conveyor/deploy$": "<rootDir>/deploy/src/index.ts",
  "^@conveyor/([\\w-]+)$": "<rootDir>/packages/$1/src/index.ts",
};

const common = {
  rootDir: import.meta.dirname,
  roots: ["<rootDir>/deploy", "<rootDir>/packages", "<rootDir>/proto", "<rootDir>/services", "<rootDir>/test"],
  testEnvironment: "node",
  transform,
  moduleNameMapper,
  moduleFileExtensions: ["ts", "js", "json"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY_DEPENDENCIES.join("|")})/)`],
};

/** @type {import('jest').Config} */
export default {
  // A global option (Jest ignores it inside projects): the stack suites drive real servers on 2 cores.
  testTimeout: 30_000,
  projects: [
    {
      ...common,
      displayName: "unit",
      testMatch: ["<rootDir>/**/src/**/*.test.ts"],
      testPathIgnorePatterns: [...common.testPathIgnorePatterns, "\\.int\\.test\\.ts$"],
    },
    {
      // Integration tests of the services and end-to-end suites, against one isolated stack on free ports that
      // test/setup/global-setup.ts starts (and global-teardown.ts stops) around the whole run.
      ...common,
      displayName: "stack",
      testMatch: ["<rootDir>/**/src/**/*.int.test.ts", "<rootDir>/test/**/*.test.ts"],
      globalSetup: "<rootDir>/test/setup/global-setup.ts",
      globalTeardown: "<rootDir>/test/setup/global-teardown.ts",
    },
  ],
};
