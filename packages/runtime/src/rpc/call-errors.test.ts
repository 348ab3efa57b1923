import { Code, ConnectError } from "@connectrpc/connect";
import { callErrorFrom, callErrorValue } from "./call-errors.js";
import { failedPrecondition, fieldErrorsOf, invalidFields, notFound } from "./errors.js";

/** What a client sees of `err` after it went through a value. */
const roundTrip = (err: unknown) => callErrorFrom(callErrorValue(err));

describe("call errors as values", () => {
  it("keeps the code and message", () => {
    const back = roundTrip(notFound("build"));
    expect(back.code).toBe(Code.NotFound);
    expect(back.rawMessage).toBe("No build found");
    expect(roundTrip(failedPrecondition("Pipeline is archived")).code).toBe(Code.FailedPrecondition);
  });

  it("keeps details, so field errors are found again", () => {
    const back = roundTrip(invalidFields([{ field: "state", code: '"x" is not a build state' }]));
    expect(back.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(back)).toEqual([{ field: "state", code: '"x" is not a build state' }]);
    // Details that arrived from the wire (type and bytes) pass through unchanged.
    expect(fieldErrorsOf(roundTrip(back))).toEqual(fieldErrorsOf(back));
  });

  it("answers a dependency it could not reach as Unavailable, as the server's interceptor does", () => {
    const down = Object.assign(new Error("connect ECONNREFUSED"), { name: "MongoServerSelectionError" });
    const back = roundTrip(down);
    expect(back.code).toBe(Code.Unavailable);
    expect(back.rawMessage).toBe("a backing service is unavailable");
  });

  it("answers any other error as Unknown with its message, as Connect does", () => {
    const back = roundTrip(new Error("boom"));
    expect(back.code).toBe(Code.Unknown);
    expect(back.rawMessage).toBe("boom");
    expect(roundTrip(new ConnectError("late", Code.DeadlineExceeded)).code).toBe(Code.DeadlineExceeded);
  });

  it("takes a code it does not know as Unknown", () => {
    expect(callErrorFrom({ code: 999, message: "odd", details: [] }).code).toBe(Code.Unknown);
  });
});
