import { describe, expect, it } from "vitest";
import { ERROR_KINDS, errors } from "../../../src/domain/errors.js";
import {
  DOOR_ERROR_KINDS,
  DoorError,
  doorErrors,
  INTERNAL_MESSAGE,
  toServiceError,
} from "../../../src/edge/door-errors.js";
import { HTTP_ERRORS, httpErrorOf } from "../../../src/edge/http-errors.js";

describe("the HTTP error table", () => {
  it("gives every kind, the domain's and the doors', its status and REST code", () => {
    expect(Object.keys(HTTP_ERRORS).sort()).toEqual([...ERROR_KINDS, ...DOOR_ERROR_KINDS].sort());
    expect(
      Object.fromEntries(Object.entries(HTTP_ERRORS).map(([k, v]) => [k, `${v.status} ${v.code}`])),
    ).toEqual({
      invalid_input: "400 invalid_input",
      unauthorized: "401 unauthorized",
      forbidden: "403 forbidden",
      not_found: "404 not_found",
      conflict: "409 conflict",
      plan_required: "403 forbidden",
      quota_exceeded: "429 quota_exceeded",
      rate_limited: "503 rate_limited",
      too_many_requests: "429 rate_limited",
      unavailable: "503 unavailable",
      internal: "500 internal",
      body_too_large: "413 invalid_input",
      unsupported_media_type: "415 invalid_input",
      method_not_allowed: "405 method_not_allowed",
      unknown_method: "404 not_found",
      not_served: "404 not_found",
      unreadable_body: "400 invalid_input",
    });
  });

  it("maps domain and door errors through the same table", () => {
    expect(httpErrorOf(errors.planRequired("scale", "acc_1", "free"))).toEqual({
      status: 403,
      code: "forbidden",
    });
    expect(httpErrorOf(doorErrors.bodyTooLarge(8 * 1024))).toEqual({
      status: 413,
      code: "invalid_input",
    });
    expect(doorErrors.bodyTooLarge(8 * 1024).message).toBe("request body larger than 8 KB");
  });

  it("answers anything unknown as 500 internal error, keeping it as the cause", () => {
    const bug = new RangeError("offset out of range");
    const err = toServiceError(bug);
    expect([err.kind, err.message, err.cause]).toEqual(["internal", INTERNAL_MESSAGE, bug]);
    expect(httpErrorOf(err)).toEqual({ status: 500, code: "internal" });
    const door = doorErrors.invalidJson("the body is empty");
    expect(toServiceError(door)).toBe(door);
    expect(door).toBeInstanceOf(DoorError);
  });
});
