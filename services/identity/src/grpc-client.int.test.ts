import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from "@conveyor/proto/health";
import {
  CreateUserRequestSchema,
  CreateUserResponseSchema,
  GetUserRequestSchema,
  GetUserResponseSchema,
} from "@conveyor/proto/identity";
import * as grpc from "@grpc/grpc-js";

// A plain @grpc/grpc-js client (no Connect) calling the running identity service over gRPC/HTTP2.
const address = new URL(process.env.IDENTITY_URL ?? "").host;
let client: grpc.Client;

beforeAll(() => {
  client = new grpc.Client(address, grpc.credentials.createInsecure());
});
afterAll(() => client.close());

function unary<Req, Res>(path: string, encode: (r: Req) => Uint8Array, decode: (b: Uint8Array) => Res, req: Req) {
  return new Promise<Res>((resolve, reject) => {
    client.makeUnaryRequest(
      path,
      (r: Req) => Buffer.from(encode(r)),
      (b: Buffer) => decode(b),
      req,
      (err, res) => (err || res === undefined ? reject(err) : resolve(res)),
    );
  });
}

describe("identity over plain gRPC", () => {
  it("reports SERVING on grpc.health.v1.Health/Check", async () => {
    const res = await unary(
      "/grpc.health.v1.Health/Check",
      (r) => toBinary(HealthCheckRequestSchema, r),
      (b) => fromBinary(HealthCheckResponseSchema, b),
      create(HealthCheckRequestSchema, { service: "ci.identity.v1.IdentityService" }),
    );
    expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("creates and reads back a user", async () => {
    const email = `grpc-${Date.now()}@example.com`;
    const created = await unary(
      "/ci.identity.v1.IdentityService/CreateUser",
      (r) => toBinary(CreateUserRequestSchema, r),
      (b) => fromBinary(CreateUserResponseSchema, b),
      create(CreateUserRequestSchema, { name: "Grpc User", email }),
    );
    const read = await unary(
      "/ci.identity.v1.IdentityService/GetUser",
      (r) => toBinary(GetUserRequestSchema, r),
      (b) => fromBinary(GetUserResponseSchema, b),
      create(GetUserRequestSchema, { id: created.user?.id ?? "" }),
    );
    expect(read.user?.email).toBe(email);
  });

  it("maps a missing user to the gRPC NOT_FOUND status", async () => {
    await expect(
      unary(
        "/ci.identity.v1.IdentityService/GetUser",
        (r) => toBinary(GetUserRequestSchema, r),
        (b) => fromBinary(GetUserResponseSchema, b),
        create(GetUserRequestSchema, { id: "00000000-0000-4000-8000-000000000000" }),
      ),
    ).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: "No user found" });
  });
});
