// Jest runs the TypeScript sources directly (transformed by SWC to CommonJS): no build is needed for unit tests.
// Type checking is a separate step (`turbo run typecheck`) in `npm test`.

/** @type {import('jest').Config['transform']} */
const transform = {
  "^.+\\.ts$": [
    "@swc/jest",
    {
      jsc: { parser: { syntax: "typescript" }, target: "es2022" },
      module: { type: "commonjs" },
      sourceMaps: "inline",
    },
  ],
};

/** Imports as written for Node's ESM resolution (`./x.js`, workspace packages) resolve to the TypeScript sources. */
const moduleNameMapper = {
  "^(\\.{1,2}/.*)\\.js$": "$1",
  "^@conveyor/proto/(.*)$": "<rootDir>/proto/src/$1.ts",
  "^@conveyor/runtime$": "<rootDir>/packages/runtime/src/index.ts",
  "^@conveyor/deploy$": "<rootDir>/deploy/src/index.ts",
};

const common = {
  rootDir: import.meta.dirname,
  roots: ["<rootDir>/deploy", "<rootDir>/packages", "<rootDir>/proto", "<rootDir>/services", "<rootDir>/test"],
  testEnvironment: "node",
  transform,
  moduleNameMapper,
  moduleFileExtensions: ["ts", "js", "json"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
};

/** @type {import('jest').Config} */
export default {
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
      testTimeout: 30_000,
    },
  ],
};
