import { inflateSync } from 'node:zlib';
import { jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Clock } from '../clock.js';
import { TesseraError } from '../errors.js';
import type { MaybePromise } from '../maybe-promise.js';
import { JWT_ALGORITHMS, STATUS_LIST_TYPE } from './access-token.js';

/** After a failed fetch of a list, none is tried again for this long: the checks meanwhile use the copy they have, or are refused at once. */
const RETRY_AFTER_FAILURE_MS = 1_000;
/** The longest status list token read: Tessera's lists (2¹⁷ tokens) take 22 KiB at most. */
const MAX_STATUS_LIST_TOKEN_LENGTH = 1 << 20;
/** The most statuses a list may hold once inflated (a bomb of a list is refused, never inflated whole). */
const MAX_STATUS_LIST_BYTES = 4 << 20;
const STATUS_BITS = [1, 2, 4, 8] as const;
/** How long a caller is asked to wait (`Retry-After`) when the status list cannot be fetched. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** A list as fetched: its statuses, and how long it may be used. */
interface StatusListCopy {
  bits: (typeof STATUS_BITS)[number];
  statuses: Buffer;
  /** UNIX ms: until when it is used as it is (its fetch, plus its `ttl`; never past its `exp`). */
  freshUntil: number;
  /** UNIX ms: until when it is used while it cannot be fetched again (`freshUntil` plus the grace, never past its `exp`). */
  usableUntil: number;
}

/** One of the issuer's status lists: where it is served, the copy in use, and the fetch under way. */
export interface StatusList {
  readonly uri: string;
  copy: StatusListCopy | undefined;
  fetching: Promise<StatusListCopy> | undefined;
  failure: { at: number; error: unknown } | undefined;
}

export interface StatusListCacheOptions {
  /** The issuer's keys (its JWKS), which sign its lists as they sign its tokens. */
  keys: JWTVerifyGetKey;
  /** The issuer's origin: a list served anywhere else is not the issuer's. */
  origin: string;
  clock: Clock;
  /** The longest a list is kept without fetching it again, whatever its `ttl` says. */
  maxTtlSeconds: number;
  /** How long past its `ttl` a list is still used while it cannot be fetched again. */
  graceMs: number;
  fetchTimeoutMs: number;
}

/**
 * Token Status Lists (draft-ietf-oauth-status-list) as a verifier of JWT access tokens reads them:
 * a list is fetched when a token first names it (`Accept: application/statuslist+jwt`), verified
 * with the issuer's keys (`typ` `statuslist+jwt`, `sub` the list's URI), and used for its `ttl`
 * (at most `maxTtlSeconds`); then the next check fetches it again, and the checks of its tokens
 * meanwhile wait for that one fetch. A list that cannot be fetched again is used for `graceMs`
 * more; after that, its tokens are refused with `503 SERVICE_UNAVAILABLE`, never let through
 * unchecked.
 */
export class StatusListCache {
  readonly #lists = new Map<string, StatusList>();

  constructor(private readonly options: StatusListCacheOptions) {}

  /** The list a token's `status.status_list.uri` names, or undefined if that is not a URL of the issuer's origin. */
  list(uri: string): StatusList | undefined {
    const known = this.#lists.get(uri);
    if (known !== undefined) return known;
    if (!onOrigin(uri, this.options.origin)) return undefined;
    const list: StatusList = { uri, copy: undefined, fetching: undefined, failure: undefined };
    this.#lists.set(uri, list);
    return list;
  }

  /**
   * Whether the status at `idx` is VALID (0), from the copy in memory while it is fresh, or once
   * the list is fetched. Throws (or rejects with) `503 SERVICE_UNAVAILABLE` when the list cannot be
   * fetched and the copy in memory, if any, is past its grace.
   */
  isValid(list: StatusList, idx: number): MaybePromise<boolean> {
    const now = this.options.clock.now();
    const copy = list.copy;
    if (copy !== undefined && now < copy.freshUntil) return statusIsValid(copy, idx);
    if (list.failure !== undefined && now - list.failure.at < RETRY_AFTER_FAILURE_MS) return this.#fromStaleCopy(list, idx, now);
    return this.#fetch(list).then(
      (fetched) => statusIsValid(fetched, idx),
      () => this.#fromStaleCopy(list, idx, this.options.clock.now()),
    );
  }

  #fromStaleCopy(list: StatusList, idx: number, now: number): boolean {
    const copy = list.copy;
    if (copy !== undefined && now < copy.usableUntil) return statusIsValid(copy, idx);
    throw statusListUnavailable(list);
  }

  /** The list fetched anew: one fetch at a time per list, which every check waiting for it shares. */
  #fetch(list: StatusList): Promise<StatusListCopy> {
    list.fetching ??= this.#download(list.uri)
      .then(
        (copy) => {
          list.copy = copy;
          list.failure = undefined;
          return copy;
        },
        (error: unknown) => {
          list.failure = { at: this.options.clock.now(), error };
          throw error;
        },
      )
      .finally(() => {
        list.fetching = undefined;
      });
    return list.fetching;
  }

  async #download(uri: string): Promise<StatusListCopy> {
    const { keys, clock, maxTtlSeconds, graceMs, fetchTimeoutMs } = this.options;
    const response = await fetch(uri, {
      headers: { accept: `application/${STATUS_LIST_TYPE}` },
      redirect: 'manual',
      signal: AbortSignal.timeout(fetchTimeoutMs),
    });
    if (response.status !== 200 || Number(response.headers.get('content-length') ?? 0) > MAX_STATUS_LIST_TOKEN_LENGTH) {
      await response.body?.cancel();
      throw new Error(`GET ${uri} answered ${response.status}`);
    }
    const token = await response.text();
    if (token.length > MAX_STATUS_LIST_TOKEN_LENGTH) throw new Error(`GET ${uri} answered ${token.length} characters`);
    const fetchedAt = clock.now();
    const { payload } = await jwtVerify(token, keys, {
      typ: STATUS_LIST_TYPE,
      algorithms: [...JWT_ALGORITHMS],
      subject: uri,
      requiredClaims: ['exp'],
      currentDate: new Date(fetchedAt),
    });
    const {
      status_list: statusList,
      ttl,
      exp,
    } = payload as { status_list?: { bits?: unknown; lst?: unknown }; ttl?: unknown; exp: number };
    const bits = STATUS_BITS.find((candidate) => candidate === statusList?.bits);
    if (bits === undefined || typeof statusList?.lst !== 'string') throw new Error(`the status list at ${uri} has no status_list`);
    const statuses = inflateSync(Buffer.from(statusList.lst, 'base64url'), { maxOutputLength: MAX_STATUS_LIST_BYTES });
    const ttlSeconds = typeof ttl === 'number' && ttl > 0 ? Math.min(ttl, maxTtlSeconds) : maxTtlSeconds;
    const expiresAt = exp * 1000;
    const freshUntil = Math.min(fetchedAt + ttlSeconds * 1000, expiresAt);
    return { bits, statuses, freshUntil, usableUntil: Math.min(freshUntil + graceMs, expiresAt) };
  }
}

/** Whether the status at `idx` is 0 (VALID); an index past the list's end is not. */
function statusIsValid(copy: StatusListCopy, idx: number): boolean {
  const position = idx * copy.bits;
  const byte = copy.statuses[position >> 3];
  return byte !== undefined && ((byte >> (position & 7)) & ((1 << copy.bits) - 1)) === 0;
}

function onOrigin(uri: string, origin: string): boolean {
  const url = URL.parse(uri);
  return url !== null && url.origin === origin && url.username === '' && url.password === '';
}

function statusListUnavailable(list: StatusList): TesseraError {
  const error = new TesseraError(
    'SERVICE_UNAVAILABLE',
    "The token's status list cannot be fetched from Tessera right now, so the token cannot be checked; try again shortly.",
    { retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS, internalDetail: `status list ${list.uri}` },
  );
  error.cause = list.failure?.error;
  return error;
}
