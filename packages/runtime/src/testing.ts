/**
 * What the runtime offers other packages' unit tests (`@conveyor/runtime/testing`), kept out of the index so that no
 * process imports it: NATS core pub/sub in memory, and waiting for a condition. It is built into dist/testing.js with
 * the fakes it imports, for the package's `./testing` export.
 */
export { createFakeNats, type FakeMsg, type FakeNats, waitFor } from "./messaging/memory-nats.js";
