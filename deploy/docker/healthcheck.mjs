// The image's HEALTHCHECK (for `docker run`; Kubernetes uses the chart's probes): the gateway's /healthz on PORT,
// a backend's /readyz on HEALTH_PORT (PORT + 100 by default), on the loopback address.
const DEFAULT_PORTS = { gateway: 8080, identity: 7101, pipelines: 7102, builds: 7103, artifacts: 7104, agents: 7105 };
const service = process.env.CONVEYOR_SERVICE ?? "gateway";
const port = Number(process.env.PORT ?? DEFAULT_PORTS[service] ?? 8080);
const url =
  service === "gateway"
    ? `http://127.0.0.1:${port}/healthz`
    : `http://127.0.0.1:${Number(process.env.HEALTH_PORT ?? port + 100)}/readyz`;
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
