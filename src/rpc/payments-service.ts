/** PaymentsService: the Connect/gRPC door to the payments application. */
import { toJson } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type PaymentsService,
  RecordPaymentRequestSchema,
} from "../../gen/ingest/v1/payments_pb.js";
import type { Authenticator } from "../domain/auth.js";
import type { PaymentsApp } from "../domain/payments/payments-app.js";

export function createPaymentsService(deps: {
  auth: Authenticator;
  payments: PaymentsApp;
}): ServiceImpl<typeof PaymentsService> {
  return {
    async recordPayment(req, ctx) {
      const principal = await deps.auth.authenticate(
        ctx.requestHeader.get("authorization"),
        "payments",
      );
      // The same plain-JSON shape the REST door hands over, so validation lives once.
      const input = toJson(RecordPaymentRequestSchema, req, { useProtoFieldName: true });
      return deps.payments.record(principal, input as Record<string, unknown>);
    },
  };
}
