import { Code, ConnectError } from "@connectrpc/connect";
import { alreadyExists, failedPrecondition, invalidFields, notFound } from "@conveyor/runtime";
import { toErrorReply } from "./error-handler.js";
import { HttpError } from "./http-error.js";

describe("toErrorReply", () => {
  it.each([
    [notFound("pipeline"), 404, { message: "No pipeline found" }],
    [
      invalidFields([{ field: "name", code: "can't be blank" }]),
      422,
      { message: "Validation Failed", errors: [{ field: "name", code: "can't be blank" }] },
    ],
    [
      alreadyExists("slug"),
      422,
      { message: "Validation Failed", errors: [{ field: "slug", code: "has already been taken" }] },
    ],
    [failedPrecondition("Pipeline could not be archived."), 422, { message: "Pipeline could not be archived." }],
    [new ConnectError("nope", Code.PermissionDenied), 403, { message: "Forbidden" }],
    [new ConnectError("down", Code.Unavailable), 503, { message: "Service Unavailable: please try again shortly" }],
    [new ConnectError("slow", Code.DeadlineExceeded), 504, { message: "Gateway Timeout: please try again shortly" }],
    [new ConnectError("secret detail", Code.Internal), 500, { message: "Internal Server Error" }],
    [
      new HttpError(403, "Your access token doesn't have the x scope"),
      403,
      { message: "Your access token doesn't have the x scope" },
    ],
  ])("maps %s", (err, status, body) => {
    expect(toErrorReply(err)).toEqual({ status, body });
  });

  it("never echoes an unexpected error's message", () => {
    expect(toErrorReply(new Error("ECONNREFUSED 10.0.0.1:27017 password=hunter2"))).toEqual({
      status: 500,
      body: { message: "Internal Server Error" },
    });
  });

  it("turns body schema violations into 422 field errors", () => {
    const err = Object.assign(new Error("bad"), {
      validation: [{ instancePath: "/name", message: "must be string", params: {} }],
      validationContext: "body",
    });
    expect(toErrorReply(err)).toEqual({
      status: 422,
      body: { message: "Validation Failed", errors: [{ field: "name", code: "must be string" }] },
    });
  });
});
