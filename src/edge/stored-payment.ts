/**
 * A payment record as the reports' StoredPayment message (GetPayment,
 * CustomerJourney, ExportPayments over RPC and the export door's NDJSON):
 * amounts as Money, exact minor units and the decimal string of
 * src/domain/payments/money.ts, times as RFC 3339.
 */
import { formatMinorUnits } from "../domain/payments/money.js";
import type { PaymentRecord } from "../domain/store/store.js";
import { UNATTRIBUTED } from "../domain/vocabulary.js";

/** A time as RFC 3339 (UTC, milliseconds). */
export const iso = (ms: number) => new Date(ms).toISOString();
/** An amount as the proto Money. */
export const money = (minor: number | bigint, currency: string) => ({
  currency,
  minorUnits: BigInt(minor),
  decimal: formatMinorUnits(minor, currency),
});

/** A first touch (stored on a customer or a visitor) as the proto Attribution. */
export function attributionMessage(a: {
  channel: string;
  source?: string;
  medium?: string;
  campaign?: string;
  landingPage: string;
  visitorId: string;
  via?: string;
  touchedAt?: number;
  ts?: number;
}) {
  return {
    channel: a.channel,
    source: a.source,
    medium: a.medium,
    campaign: a.campaign,
    landingPage: a.landingPage,
    visitorId: a.visitorId,
    link: a.via ?? "",
    touchedAt: iso(a.touchedAt ?? a.ts ?? 0),
  };
}

/** A stored payment as the proto StoredPayment. */
export function paymentMessage(p: PaymentRecord) {
  return {
    siteId: p.siteId,
    paymentId: p.paymentId,
    customerId: p.customerId,
    amount: money(p.amountMinor, p.currency),
    fee: p.feeMinor === undefined ? undefined : money(p.feeMinor, p.currency),
    kind: p.kind,
    status: p.status,
    paidAt: iso(p.paidAt),
    metadata: p.metadata,
    subscriptionId: p.subscriptionId,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
    channel: p.attribution?.channel ?? p.erasedChannel ?? UNATTRIBUTED,
    attribution: p.attribution && attributionMessage(p.attribution),
  };
}
