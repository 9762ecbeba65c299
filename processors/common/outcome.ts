/** Outcomes that say "try again later" rather than anything about the page. */
const TRANSIENT_STATUS = new Set([429, 503]);
const TRANSIENT_ERRORS = new Set([
  'CS_LEASE_EXPIRED',
  'CS_LEASE_LOST',
  'CS_CONNECT',
  'CS_RESET',
  'CS_TIMEOUT',
  'CS_DNS',
]);

export function isTransient(status: number, errorCode: string | null): boolean {
  return errorCode !== null ? TRANSIENT_ERRORS.has(errorCode) : TRANSIENT_STATUS.has(status);
}

/**
 * Whether a fetch outcome is the URL's last word: the frontier will not retry it, and the parser
 * publishes its page record. Both sides use this one rule, so a retried URL gets exactly one record.
 */
export function isFinalOutcome(
  status: number,
  errorCode: string | null,
  attempt: number,
  maxAttempts: number,
): boolean {
  return !isTransient(status, errorCode) || attempt >= maxAttempts;
}
