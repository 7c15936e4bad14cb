/**
 * The largest request body of each API method, in bytes, on every door
 * (REST, Connect, gRPC-Web, gRPC). Also read by the OpenAPI generator, so
 * the published limits are the enforced ones.
 */

/** By `package.Service/Method`. */
export const BODY_LIMITS: Readonly<Record<string, number>> = {
  "ingest.v1.EventsService/RecordEvents": 8 * 1024,
  "ingest.v1.PaymentsService/RecordPayment": 64 * 1024,
};

/** The public browser endpoint, POST /api/v1/collect: the same events body as RecordEvents. */
export const COLLECT_BODY_LIMIT = 8 * 1024;

/** Every other method (admin, reports, health). */
export const DEFAULT_BODY_LIMIT = 64 * 1024;

/** The body limit of a method named by its service's type name and its own name. */
export function bodyLimitOf(serviceTypeName: string, methodName: string): number {
  return BODY_LIMITS[`${serviceTypeName}/${methodName}`] ?? DEFAULT_BODY_LIMIT;
}
