/**
 * A call's error as a value, and back: several calls answered in one (a batch of reads) carry each one's error in
 * its answer, with the code, message and details a call of its own would have ended with. What a server's
 * interceptors would have done to it (a dependency it could not reach is Unavailable) is done here too.
 */
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isDependencyUnavailable } from "./unavailable.js";

/** An error as carried in an answer (the shape of the protos' ReadError). */
export interface CallErrorValue {
  code: number;
  message: string;
  details: Array<{ type: string; value: Uint8Array }>;
}

/** Every Connect code: anything else arriving is taken as Unknown. */
const CODES = new Set<number>(Object.values(Code).filter((c): c is number => typeof c === "number"));

/** The error a call of its own would have ended with, as a value. */
export function callErrorValue(err: unknown): CallErrorValue {
  const connect =
    !(err instanceof ConnectError) && isDependencyUnavailable(err)
      ? new ConnectError("a backing service is unavailable", Code.Unavailable, undefined, undefined, err)
      : ConnectError.from(err);
  return {
    code: connect.code,
    message: connect.rawMessage,
    details: connect.details.map((d) =>
      "desc" in d
        ? { type: d.desc.typeName, value: toBinary(d.desc as DescMessage, create(d.desc as DescMessage, d.value)) }
        : { type: d.type, value: d.value },
    ),
  };
}

/** The ConnectError a client would have seen from a call of its own. */
export function callErrorFrom(value: CallErrorValue): ConnectError {
  const err = new ConnectError(value.message, CODES.has(value.code) ? value.code : Code.Unknown);
  err.details = value.details.map((d) => ({ type: d.type, value: d.value }));
  return err;
}
