/**
 * How long after a lease's last fetch time (its window plus the fetch timeout) its result may
 * still come before the frontier gives the lease up and issues the URL again. A fetcher whose
 * clock runs ahead of the frontier's may take at most this much of it (fetcher/lease-clock.ts):
 * a start later than that could overlap the lease issued again.
 */
export const EXPIRY_GRACE_MS = 5_000;

/** When the frontier gives up a lease whose fetch must start by `notAfter`: past its fetch timeout and the grace. */
export function leaseExpiresAt(notAfter: number, fetchTimeoutMs: number): number {
  return notAfter + fetchTimeoutMs + EXPIRY_GRACE_MS;
}

/** The not-after deadline of a lease given up at `expiresAt` (the inverse of {@link leaseExpiresAt}). */
export function leaseNotAfter(expiresAt: number, fetchTimeoutMs: number): number {
  return expiresAt - fetchTimeoutMs - EXPIRY_GRACE_MS;
}
