import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";

export interface ServiceClientOptions {
  /** Upper bound of every call, in milliseconds. */
  timeoutMs?: number;
  /** "connect" (default, fastest in Node) or "grpc". */
  protocol?: "connect" | "grpc";
  interceptors?: Interceptor[];
}

/** A client of one backend service over HTTP/2, binary protobuf, with a default deadline on every call. */
export function createServiceClient<T extends DescService>(
  service: T,
  baseUrl: string,
  opts: ServiceClientOptions = {},
): Client<T> {
  const common = {
    baseUrl,
    useBinaryFormat: true,
    defaultTimeoutMs: opts.timeoutMs ?? 10_000,
    interceptors: opts.interceptors ?? [],
  };
  const transport =
    opts.protocol === "grpc" ? createGrpcTransport(common) : createConnectTransport({ ...common, httpVersion: "2" });
  return createClient(service, transport);
}
export type { Client } from "@connectrpc/connect";
