/** Tables of refused GET requests and the exact error envelope each must get. */
import { expect } from "vitest";

/** A query string, its request headers, and the status, code and message of its answer. */
export type Refusal = [
  query: string,
  headers: Record<string, string>,
  status: number,
  code: string,
  message: string,
];

/** Sends each refusal to `urlOf(query)` and checks its status and envelope exactly (the query names a failing row). */
export async function expectRefusals(
  urlOf: (query: string) => string,
  cases: readonly Refusal[],
): Promise<void> {
  for (const [query, headers, status, code, message] of cases) {
    const res = await fetch(urlOf(query), { headers });
    expect({ query, status: res.status, body: await res.json() }).toEqual({
      query,
      status,
      body: { ok: false, error: { code, message } },
    });
  }
}
