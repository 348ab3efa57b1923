import Fastify from "fastify";

/**
 * The baseline of `npm run bench`: a bare Fastify hello-world on 127.0.0.1, on the port given as PORT (0 = any free
 * one). It prints {"port": N} on stdout once it listens, and stops on SIGTERM or SIGINT.
 */
const app = Fastify({ logger: false });
app.get("/", async () => ({ hello: "world" }));
const port = Number(process.env.PORT ?? 0);
await app.listen({ host: "127.0.0.1", port });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : port })}\n`);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => void app.close().then(() => process.exit(0)));
}
