import { create } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus as Status } from "@conveyor/proto/health";

/** Serving state of a process, shared by its gRPC health service and its HTTP/1.1 health endpoint. */
export interface HealthState {
  readonly serving: boolean;
  setServing(serving: boolean): void;
  /** The fully-qualified service names this process serves, for example "ci.identity.v1.IdentityService". */
  readonly services: readonly string[];
  onChange(listener: () => void): () => void;
}

/** Creates a health state that starts NOT_SERVING until the process says it is ready. */
export function createHealthState(services: readonly string[]): HealthState {
  let serving = false;
  const listeners = new Set<() => void>();
  return {
    get serving() {
      return serving;
    },
    setServing(value) {
      serving = value;
      for (const l of listeners) l();
    },
    services,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function statusOf(state: HealthState, service: string): Status {
  if (service !== "" && !state.services.includes(service)) return Status.SERVICE_UNKNOWN;
  return state.serving ? Status.SERVING : Status.NOT_SERVING;
}

/** The standard grpc.health.v1.Health service over a health state. */
export function createHealthService(state: HealthState): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const status = statusOf(state, req.service);
      if (status === Status.SERVICE_UNKNOWN) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return { status };
    },
    list() {
      const statuses: Record<string, ReturnType<typeof create<typeof HealthCheckResponseSchema>>> = {};
      for (const name of ["", ...state.services]) {
        statuses[name] = create(HealthCheckResponseSchema, { status: statusOf(state, name) });
      }
      return { statuses };
    },
    async *watch(req, ctx) {
      let last: Status | undefined;
      let wake: (() => void) | undefined;
      const off = state.onChange(() => wake?.());
      try {
        while (!ctx.signal.aborted) {
          const status = statusOf(state, req.service);
          if (status !== last) {
            last = status;
            yield { status };
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
          });
        }
      } finally {
        off();
      }
    },
  };
}

/** Registers the health service on a Connect router. */
export function registerHealth(router: ConnectRouter, state: HealthState): void {
  router.service(Health, createHealthService(state));
}
