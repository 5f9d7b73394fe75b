/** How long a client may take; what keeps slow clients (slow-loris) from holding connections. */
export interface HttpTimeouts {
  /** From connecting (or the previous response) to the end of the headers (HTTP_HEADERS_TIMEOUT_MS). */
  headersTimeoutMs: number;
  /** From connecting to the end of the whole request, body included (HTTP_REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open (HTTP_KEEP_ALIVE_TIMEOUT_MS). */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = Object.freeze({
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
});
