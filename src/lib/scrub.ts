/**
 * Errors as the logs may show them: type, code, call sites and cause, never
 * the message (which may quote input: a key, an email, a body).
 */

/** What the log says of an error. */
export interface ScrubbedError {
  type: string;
  /** A database's error code (e.g. MongoDB's 121, document validation failed). */
  code?: string | number;
  stack?: string;
  /** What caused it (a store's refusal carries the driver's error). */
  cause?: ScrubbedError;
}

/** An error for the log: its type, code, call sites and cause, not its message. */
export function scrub(err: unknown, depth = 0): ScrubbedError {
  if (!(err instanceof Error)) {
    const code = (err as { code?: unknown } | null)?.code;
    return { type: typeof err, ...(isCode(code) ? { code } : {}) };
  }
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: unknown }).cause;
  return {
    type: err.name,
    ...(isCode(code) ? { code } : {}),
    stack: err.stack?.split("\n").slice(1).join("\n"),
    ...(cause !== undefined && depth < 3 ? { cause: scrub(cause, depth + 1) } : {}),
  };
}

function isCode(code: unknown): code is string | number {
  return typeof code === "number" || (typeof code === "string" && /^[\w.-]{1,64}$/.test(code));
}
