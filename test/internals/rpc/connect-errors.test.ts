import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { ERROR_KINDS, errors } from "../../../src/domain/errors.js";
import { DOOR_ERROR_KINDS, doorErrors } from "../../../src/edge/door-errors.js";
import { CONNECT_CODES, toConnectError } from "../../../src/rpc/connect-errors.js";

describe("the Connect code table", () => {
  it("gives every kind, the domain's and the doors', its Connect code", () => {
    expect(Object.keys(CONNECT_CODES).sort()).toEqual([...ERROR_KINDS, ...DOOR_ERROR_KINDS].sort());
    expect(Object.fromEntries(Object.entries(CONNECT_CODES).map(([k, v]) => [k, Code[v]]))).toEqual(
      {
        invalid_input: "InvalidArgument",
        unauthorized: "Unauthenticated",
        forbidden: "PermissionDenied",
        not_found: "NotFound",
        conflict: "AlreadyExists",
        plan_required: "FailedPrecondition",
        quota_exceeded: "ResourceExhausted",
        rate_limited: "Unavailable",
        too_many_requests: "ResourceExhausted",
        unavailable: "Unavailable",
        internal: "Internal",
        body_too_large: "InvalidArgument",
        unsupported_media_type: "InvalidArgument",
        method_not_allowed: "NotFound",
        unknown_method: "Unimplemented",
        not_served: "NotFound",
        unreadable_body: "InvalidArgument",
      },
    );
  });

  it("carries the REST message, code and status, Retry-After and the cause", () => {
    const err = errors.quotaExceeded(30);
    const ce = toConnectError(err);
    expect(ce.code).toBe(Code.ResourceExhausted);
    expect(ce.rawMessage).toBe("monthly event quota exceeded");
    expect(ce.metadata.get("retry-after")).toBe("30");
    const [info] = ce.findDetails(ErrorInfoSchema);
    expect([info?.reason, info?.domain, info?.metadata]).toEqual([
      "quota_exceeded",
      "ingest.v1",
      { http_status: "429" },
    ]);
    expect(ce.cause).toBe(err);
  });

  it("hides an internal cause behind `internal error`", () => {
    const bug = new Error("secret detail mk_live_0123");
    const ce = toConnectError(bug);
    expect([ce.code, ce.rawMessage]).toEqual([Code.Internal, "internal error"]);
    expect(ce.findDetails(ErrorInfoSchema)[0]?.reason).toBe("internal");
  });

  it("answers door errors with their own code", () => {
    expect(toConnectError(doorErrors.unknownMethod("a.B", "C")).code).toBe(Code.Unimplemented);
    const passed = new ConnectError("as is", Code.Aborted);
    expect(toConnectError(passed)).toBe(passed);
  });
});
