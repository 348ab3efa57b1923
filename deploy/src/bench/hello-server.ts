import Fastify from "fastify";

/**
 * The baselines of `npm run bench`: a bare Fastify hello-world on 127.0.0.1, on the port given as PORT (0 = any free
 * one), and `/body?bytes=N`, a JSON body of N bytes made once (what a client pays to receive a large answer that
 * costs the server nothing). It prints {"port": N} on stdout once it listens, and stops on SIGTERM or SIGINT.
 */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const bodies = new Map<number, Buffer>();
const app = Fastify({ logger: false });
app.get("/", async () => ({ hello: "world" }));
app.get<{ Querystring: { bytes?: string } }>("/body", async (request, reply) => {
  const bytes = Math.min(Math.max(Math.floor(Number(request.query.bytes) || 2), 2), MAX_BODY_BYTES);
  let body = bodies.get(bytes);
  if (!body) {
    if (bodies.size >= 8) bodies.clear();
    body = Buffer.from(JSON.stringify("x".repeat(bytes - 2)));
    bodies.set(bytes, body);
  }
  return reply.type("application/json; charset=utf-8").send(body);
});
const port = Number(process.env.PORT ?? 0);
await app.listen({ host: "127.0.0.1", port });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : port })}\n`);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => void app.close().then(() => process.exit(0)));
}
