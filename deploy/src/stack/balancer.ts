import { connect, createServer, type Server, type Socket } from "node:net";

/** One address a balancer forwards to, with what is known of its health. */
export interface BalancerTarget {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** Whether the target passed its last readiness check (unready targets get no new connections). */
  ready(): boolean;
  /** Called when a connection to it was refused: it is taken out of rotation until its next good check. */
  markDown(): void;
}

/** A TCP balancer listening on one port. */
export interface Balancer {
  readonly name: string;
  readonly port: number;
  /** Connections handed to each target so far, by target name. */
  connections(): Record<string, number>;
  /** Stops listening and cuts the connections it forwards. */
  close(): Promise<void>;
}

export interface BalancerOptions {
  name: string;
  host: string;
  port: number;
  targets: readonly BalancerTarget[];
}

/**
 * A layer-4 balancer, as a Kubernetes Service (kube-proxy) is one: each new TCP connection goes to the next ready
 * target in turn, and stays there. A target that refuses the connection is skipped for the next one, which is
 * safe because not a byte of the client's was sent yet (the client socket stays paused until a target accepted).
 * When no target is ready, every target is tried anyway, so that a readiness check lagging behind a restart costs
 * nothing. HTTP/2 clients keep one connection for many calls: the servers end connections after an age
 * (MAX_CONNECTION_AGE_S), which is what spreads long-lived clients over the replicas again.
 */
export async function startBalancer(opts: BalancerOptions): Promise<Balancer> {
  const counts = new Map<string, number>(opts.targets.map((t) => [t.name, 0]));
  const open = new Set<Socket>();
  let next = 0;

  /** The targets to try for one connection: the ready ones in turn from the cursor, else all of them. */
  const order = (): BalancerTarget[] => {
    const ready = opts.targets.filter((t) => t.ready());
    const pool = ready.length > 0 ? ready : [...opts.targets];
    const start = next++ % Math.max(pool.length, 1);
    return [...pool.slice(start), ...pool.slice(0, start)];
  };

  const forward = (client: Socket, candidates: BalancerTarget[]) => {
    const target = candidates.shift();
    if (!target) {
      client.destroy();
      return;
    }
    const upstream = connect({ host: target.host, port: target.port });
    open.add(upstream);
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      counts.set(target.name, (counts.get(target.name) ?? 0) + 1);
      upstream.setNoDelay(true);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.once("error", () => {
      if (connected || client.destroyed) return;
      target.markDown();
      forward(client, candidates);
    });
    upstream.once("close", () => {
      open.delete(upstream);
      if (connected) client.destroy();
    });
    client.once("close", () => upstream.destroy());
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.setNoDelay(true);
    client.on("error", () => client.destroy());
    client.once("close", () => open.delete(client));
    forward(client, order());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: opts.port, host: opts.host, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });

  return {
    name: opts.name,
    port: opts.port,
    connections: () => Object.fromEntries(counts),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
      }),
  };
}
