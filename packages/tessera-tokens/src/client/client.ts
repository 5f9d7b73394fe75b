// tessera-tokens/client: Tessera's own client, for server code and for web pages. One self-contained ES
// module with no imports and no dependencies, so that a page can load it as it is served
// (`<script type="module">`, `GET /tessera-client.js`) and Node (20 or later) can import it from
// the package. It keeps to what both have: fetch, Request, Headers, URL, TextEncoder, btoa.
// docs/client.md documents it; tests/unit/client.test.ts and tests/http/client.test.ts test it.

// A type only: the built module imports nothing.
import type { createHash } from 'node:crypto';

/** The error codes of the contract (`errorCode` of every error body). */
export type TesseraErrorCode =
  | 'invalid_request'
  | 'unsupported_grant_type'
  | 'unauthorized_client'
  | 'invalid_client'
  | 'INVALID_TOKEN'
  | 'UNAUTHORIZED'
  | 'ATTESTATION_REQUIRED'
  | 'ATTESTATION_INVALID'
  | 'BASIC_ANONYMOUS_DISABLED'
  | 'ADMIN_REQUIRED'
  | 'ME_NOT_ALLOWED_FOR_ADMIN'
  | 'APP_NOT_FOUND'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL_ERROR'
  | 'SERVICE_UNAVAILABLE';

/**
 * An error answer of the service (or of what stands in front of it), or a refusal by the client
 * itself. `status` is the HTTP status, 0 when no request was sent. `errorCode` is the contract's
 * code; for an answer that is not the contract's JSON (a proxy's error page), `HTTP_<status>`.
 */
export class TesseraClientError extends Error {
  override readonly name = 'TesseraClientError';

  constructor(
    readonly errorCode: TesseraErrorCode | (string & {}),
    message: string,
    readonly status: number,
    /** Seconds to wait before trying again (`Retry-After`), or null when the answer did not say. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }

  /** The error a non-2xx answer carries. Reads the body. */
  static async fromResponse(response: Response, now: number = Date.now()): Promise<TesseraClientError> {
    const retryAfter = retryAfterSeconds(response, now);
    const body = (await response.json().catch(() => null)) as {
      errorCode?: unknown;
      error?: unknown;
      message?: unknown;
      error_description?: unknown;
    } | null;
    const code =
      typeof body?.errorCode === 'string' ? body.errorCode : typeof body?.error === 'string' ? body.error : `HTTP_${response.status}`;
    const message =
      typeof body?.message === 'string'
        ? body.message
        : typeof body?.error_description === 'string'
          ? body.error_description
          : `The service answered ${response.status}.`;
    return new TesseraClientError(code, message, response.status, retryAfter);
  }
}

/** What `GET /api/apps/{appId}/whoami` answers. */
export interface Whoami {
  appId: string;
  principal: 'anonymous' | 'admin';
  /** `ANONYMOUS`, or the app's admin id. */
  id: string;
  auth: 'basic' | 'bearer';
  /** UNIX ms, or null for a token that never expires (and for Basic). */
  expiresAt: number | null;
  /** For an anonymous token issued with an attestation: its provider. */
  attestation?: 'pow' | 'apple' | 'android' | 'debug';
}

/**
 * How anonymous token requests prove they come from the app (`X-Tessera-Attestation`):
 * - `'auto'` (the default): none, until the service answers `ATTESTATION_REQUIRED` (the app enforces
 *   attestation); then a proof of work, for that request and every later one;
 * - `'pow'`: a proof of work with every request (so that `monitor` counts them as verified);
 * - `'none'`: never;
 * - a function: the header's value, `<provider>.<payload>`, from the platform (App Attest, Play
 *   Integrity) or a debug token (`debug.tdbg_…`), asked for anew for each token request.
 */
export type AttestationOption = 'auto' | 'pow' | 'none' | (() => string | Promise<string>);

/** Where anonymous tokens may be kept across page loads: `localStorage` and `sessionStorage` fit. */
export interface TokenStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface Clock {
  /** UNIX ms. */
  now(): number;
}

export type FetchFunction = (input: Request) => Promise<Response>;

export interface RetryOptions {
  /** Tries of one request in all, the first included (default 3). 1: never retry. */
  maxAttempts?: number;
  /** The longest `Retry-After` the client waits for, in seconds (default 30); a longer one is returned (or thrown) at once. */
  maxWaitSeconds?: number;
}

interface CommonOptions {
  /** Where Tessera is, e.g. `https://tessera.example.com` (a path prefix is kept: `https://example.com/auth`). */
  baseUrl: string | URL;
  appId: string;
  /** `Retry-After` on `429` and `503`: how often and how long to wait. */
  retry?: RetryOptions;
  /**
   * Origins besides `baseUrl`'s to which `fetch` may send the app's credentials, e.g. the rest of
   * the backend behind forward authentication (`https://api.example.com`). A request to any other
   * origin is refused before it is sent, so that a token never leaks to a third party.
   */
  backendOrigins?: readonly string[];
  /** Renew a token this many seconds before it expires, or at three quarters of its life if that is later (default 60). */
  renewBeforeSeconds?: number;
  /** For tests: the fetch to use (default: the global one, looked up at each call). */
  fetch?: FetchFunction;
  /** For tests: the time. */
  clock?: Clock;
  /** For tests: how to wait `ms` milliseconds. */
  sleep?: (ms: number) => Promise<void>;
}

/** An anonymous token, obtained once with the AppID and AppKey and kept (for web pages and apps). */
export interface AnonymousOptions extends CommonOptions {
  mode: 'anonymous';
  appKey: string;
  /** Keep the token across page loads (e.g. `localStorage`); by default it is kept in memory. */
  storage?: TokenStorage;
  /** How its token requests prove they come from the app (default `'auto'`). */
  attestation?: AttestationOption;
}

/** Basic anonymous access: no token, `Authorization: Basic base64(AppID:AppKey)` on every request. */
export interface BasicOptions extends CommonOptions {
  mode: 'basic';
  /** Sent as the password of the Basic header, which Tessera does not check; default `anonymous`. */
  appKey?: string;
}

/**
 * Admin tokens, for server code only (never in a web page: the seed's rule 2). Each is asked for with
 * a short `expiresAt` and renewed before it expires.
 */
export interface AdminOptions extends CommonOptions {
  mode: 'admin';
  clientId: string;
  clientSecret: string;
  /** How long each admin token is asked to live, in seconds (default 3600). At most the app's `adminTokenMaxLifetimeSeconds`. */
  adminTokenLifetimeSeconds?: number;
  /**
   * With a credential's ClientID (`tcl_…`): only these of its scopes for each token (RFC 6749
   * `scope`; default: all of the credential's). More than the credential has is `invalid_scope`.
   * The app's own ClientID ignores it.
   */
  scope?: readonly string[];
}

export type TesseraClientOptions = AnonymousOptions | BasicOptions | AdminOptions;

/** What `expires_in` means for a token that never expires. */
const NEVER_EXPIRES_IN = 2147483646;
const DEFAULT_ADMIN_TOKEN_LIFETIME_SECONDS = 3600;
const DEFAULT_RENEW_BEFORE_SECONDS = 60;
const DEFAULT_MAX_ATTEMPTS = 3;
const DEFAULT_MAX_WAIT_SECONDS = 30;

interface HeldToken {
  accessToken: string;
  /** UNIX ms by the client's clock, or null for never. */
  expiresAt: number | null;
  /** From when the token is renewed (in the background while it still works); null for never. */
  renewAt: number | null;
}

/**
 * A client of one app of a Tessera service. `fetch` sends requests with the app's credentials (a
 * token it obtains, keeps and renews, or the Basic header); `token`, `authorization` and `whoami`
 * are there for other uses. Any number of concurrent calls share one token request.
 */
export class TesseraClient {
  /** `{baseUrl}/api/apps/{appId}`: where the app's endpoints are. */
  readonly appUrl: string;
  readonly mode: TesseraClientOptions['mode'];

  readonly #options: TesseraClientOptions;
  readonly #origins: ReadonlySet<string>;
  readonly #clock: Clock;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #maxAttempts: number;
  readonly #maxWaitSeconds: number;
  readonly #renewBeforeMs: number;
  #held: HeldToken | null = null;
  #renewal: Promise<HeldToken> | null = null;
  /** After a failed renewal in the background, the next one waits until then (UNIX ms). */
  #quietUntil = 0;
  /** With `attestation: 'auto'`: whether the service asked for a proof of work (then every token request sends one). */
  #powAsked = false;

  constructor(options: TesseraClientOptions) {
    if (options.mode === 'admin' && typeof (globalThis as { document?: unknown }).document !== 'undefined') {
      throw new TesseraClientError(
        'unauthorized_client',
        'The ClientID and ClientSecret must not be used in a web page: request admin tokens from server-side code.',
        0,
      );
    }
    if (!['anonymous', 'basic', 'admin'].includes(options.mode)) throw new TypeError('mode must be "anonymous", "basic" or "admin".');
    requireText(options.appId, 'appId');
    if (options.mode === 'anonymous') requireText(options.appKey, 'appKey');
    if (options.mode === 'admin') {
      requireText(options.clientId, 'clientId');
      requireText(options.clientSecret, 'clientSecret');
      requireNumber(options.adminTokenLifetimeSeconds ?? DEFAULT_ADMIN_TOKEN_LIFETIME_SECONDS, 'adminTokenLifetimeSeconds', 1);
      if (options.scope !== undefined && (!Array.isArray(options.scope) || options.scope.length === 0))
        throw new TypeError('scope must be a list of at least one scope, such as ["events:read"].');
      for (const scope of options.scope ?? []) requireText(scope, 'scope');
    }
    this.#options = options;
    this.mode = options.mode;
    const base = new URL(options.baseUrl);
    this.appUrl = `${base.href.replace(/\/+$/, '')}/api/apps/${encodeURIComponent(options.appId)}`;
    this.#origins = new Set([base.origin, ...(options.backendOrigins ?? []).map((origin) => new URL(origin).origin)]);
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#maxAttempts = requireNumber(options.retry?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, 'retry.maxAttempts', 1);
    this.#maxWaitSeconds = requireNumber(options.retry?.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS, 'retry.maxWaitSeconds', 0);
    this.#renewBeforeMs = requireNumber(options.renewBeforeSeconds ?? DEFAULT_RENEW_BEFORE_SECONDS, 'renewBeforeSeconds', 0) * 1000;
  }

  /**
   * `fetch` with the app's credentials: the `Authorization` header is set (a relative URL is taken
   * from `baseUrl`). A `401 INVALID_TOKEN` (a revoked or expired token) gets a new token and one more
   * try; a `429` or `503` with `Retry-After` is tried again after that wait, within `retry`'s bounds.
   * Resolves with the last answer, whatever its status, like `fetch`; rejects when no token can be
   * obtained (`TesseraClientError`) or the network fails.
   */
  async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = input instanceof Request ? new Request(input, init) : new Request(new URL(input, this.#options.baseUrl), init);
    if (!this.#origins.has(new URL(request.url).origin)) {
      throw new TypeError(
        `Not sent: ${new URL(request.url).origin} is not Tessera's origin nor one of backendOrigins, and would receive the app's credentials.`,
      );
    }
    let renewed = false;
    for (let attempt = 1; ; attempt++) {
      const token = this.mode === 'basic' ? null : await this.token();
      const outgoing = request.clone();
      outgoing.headers.set('authorization', token === null ? this.#basicHeader() : `Bearer ${token}`);
      const response = await this.#send(outgoing);
      if (token !== null && !renewed && (await isInvalidToken(response))) {
        renewed = true;
        attempt--;
        this.forget(token);
        await response.body?.cancel();
        continue;
      }
      const wait = this.#retryWait(response, attempt);
      if (wait === null) return response;
      await response.body?.cancel();
      await this.#sleep(wait);
    }
  }

  /** `fetch`, then the answer's JSON; a non-2xx answer is thrown as a `TesseraClientError`. */
  async json<T = unknown>(input: string | URL | Request, init?: RequestInit): Promise<T> {
    const response = await this.fetch(input, init);
    if (!response.ok) throw await TesseraClientError.fromResponse(response, this.#clock.now());
    return (response.status === 204 ? undefined : await response.json()) as T;
  }

  /** Who the service takes this client for (`GET …/whoami`). */
  whoami(): Promise<Whoami> {
    return this.json<Whoami>(`${this.appUrl}/whoami`);
  }

  /** The value of the `Authorization` header to send now (for other HTTP clients, or a WebSocket's first message). */
  async authorization(): Promise<string> {
    return this.mode === 'basic' ? this.#basicHeader() : `Bearer ${await this.token()}`;
  }

  /**
   * The current access token: the one held while it is not due for renewal; during the last part of
   * its life (`renewBeforeSeconds`) the one held while a new one is obtained in the background; else
   * a new one. Concurrent callers share one token request.
   */
  async token(): Promise<string> {
    if (this.mode === 'basic') throw new TypeError('Basic anonymous access uses no token.');
    const held = this.#held ?? this.#stored();
    const now = this.#clock.now();
    if (held !== null && (held.renewAt === null || now < held.renewAt)) return held.accessToken;
    if (held !== null && held.expiresAt !== null && now < held.expiresAt) {
      // The held token still works meanwhile. A failed renewal is tried again by a later call, after
      // a pause, so that calls do not turn into a stream of token requests (failed admin attempts
      // are rate-limited).
      const expiresAt = held.expiresAt;
      if (now >= this.#quietUntil) {
        this.#renew().catch(() => {
          const failedAt = this.#clock.now();
          this.#quietUntil = failedAt + Math.min(5_000, Math.max(0, expiresAt - failedAt) / 2);
        });
      }
      return held.accessToken;
    }
    return (await this.#renew()).accessToken;
  }

  /** Forgets the token (all of them when none is named), so that the next call obtains a new one. */
  forget(token?: string): void {
    if (token !== undefined && this.#held?.accessToken !== token) return;
    this.#held = null;
    if (this.#options.mode === 'anonymous') this.#options.storage?.removeItem(this.#storageKey());
  }

  #renew(): Promise<HeldToken> {
    this.#renewal ??= this.#requestToken().finally(() => {
      this.#renewal = null;
    });
    return this.#renewal;
  }

  async #requestToken(): Promise<HeldToken> {
    const options = this.#options;
    const startedAt = this.#clock.now();
    let response = await this.#postTokenRequest(startedAt, await this.#attestation());
    // An app that enforces attestation: a proof of work, once more; a proof refused (a challenge that
    // expired on the way), a new one, once.
    if (options.mode === 'anonymous' && response.status === 401) {
      const code = await errorCodeOf(response);
      const again =
        (code === 'ATTESTATION_REQUIRED' && (options.attestation ?? 'auto') === 'auto') ||
        (code === 'ATTESTATION_INVALID' && this.#sendsPow());
      if (again) {
        this.#powAsked = true;
        await response.body?.cancel();
        response = await this.#postTokenRequest(startedAt, await this.#attestation());
      }
    }
    // An admin token's expiresAt is an instant, which the server reads by its own clock: if this
    // machine's clock is behind by more than the lifetime, the instant is past there. Ask once more,
    // counting from the server's time (its `Date` header, which Node can read).
    const serverTime = Date.parse(response.headers.get('date') ?? '');
    if (options.mode === 'admin' && response.status === 400 && serverTime - startedAt > 1_000) {
      await response.body?.cancel();
      response = await this.#postTokenRequest(serverTime);
    }
    if (!response.ok) throw await TesseraClientError.fromResponse(response, this.#clock.now());
    const body = (await response.json().catch(() => null)) as { access_token?: unknown; expires_in?: unknown } | null;
    if (typeof body?.access_token !== 'string' || typeof body.expires_in !== 'number' || !(body.expires_in >= 0)) {
      throw new TesseraClientError('INVALID_RESPONSE', 'The token endpoint answered without an access token.', response.status);
    }
    const held = this.#heldToken(body.access_token, startedAt, body.expires_in);
    this.#held = held;
    if (options.mode === 'anonymous') options.storage?.setItem(this.#storageKey(), JSON.stringify(held));
    return held;
  }

  /** Whether this client's anonymous token requests send a proof of work now. */
  #sendsPow(): boolean {
    const option = this.#options.mode === 'anonymous' ? (this.#options.attestation ?? 'auto') : 'none';
    return option === 'pow' || (option === 'auto' && this.#powAsked);
  }

  /** `X-Tessera-Attestation` for the next token request, or null. */
  async #attestation(): Promise<string | null> {
    if (this.#options.mode !== 'anonymous') return null;
    const option = this.#options.attestation ?? 'auto';
    if (typeof option === 'function') return await option();
    if (!this.#sendsPow()) return null;
    const response = await this.#send(new Request(`${this.appUrl}/attestation/challenge`));
    if (!response.ok) throw await TesseraClientError.fromResponse(response, this.#clock.now());
    const challenge = (await response.json()) as PowChallenge;
    return `pow.${base64(JSON.stringify({ challenge, solution: await solvePow(challenge.parameters) }))}`;
  }

  /** The token request (admin tokens expire `adminTokenLifetimeSeconds` after `now`), within `retry`'s bounds. */
  async #postTokenRequest(now: number, attestation: string | null = null): Promise<Response> {
    const options = this.#options;
    const fields =
      options.mode === 'admin'
        ? {
            grant_type: 'client_credentials',
            client_id: options.clientId,
            client_secret: options.clientSecret,
            // The seed's advice: a short expiry for admin tokens, since a leaked one exposes all app data.
            expiresAt: now + (options.adminTokenLifetimeSeconds ?? DEFAULT_ADMIN_TOKEN_LIFETIME_SECONDS) * 1000,
            ...(options.scope === undefined ? {} : { scope: options.scope.join(' ') }),
          }
        : { grant_type: 'client_credentials', client_id: options.appId, client_secret: (options as AnonymousOptions).appKey };
    const request = new Request(`${this.appUrl}/oauth2/token`, {
      method: 'POST',
      // The seed's request: Basic with the AppID as user, and the credentials in the body.
      headers: {
        authorization: this.#basicHeader(),
        'content-type': 'application/json',
        ...(attestation === null ? {} : { 'x-tessera-attestation': attestation }),
      },
      body: JSON.stringify(fields),
    });
    for (let attempt = 1; ; attempt++) {
      const response = await this.#send(request.clone());
      const wait = this.#retryWait(response, attempt);
      if (wait === null) return response;
      await response.body?.cancel();
      await this.#sleep(wait);
    }
  }

  /**
   * `expires_in` counts from the server's handling of the request, which came after `startedAt`: the
   * token expires no earlier than `startedAt + expires_in` by the client's clock, whatever its offset
   * from the server's.
   */
  #heldToken(accessToken: string, startedAt: number, expiresIn: number): HeldToken {
    if (expiresIn >= NEVER_EXPIRES_IN) return { accessToken, expiresAt: null, renewAt: null };
    const lifetime = expiresIn * 1000;
    const expiresAt = startedAt + lifetime;
    return { accessToken, expiresAt, renewAt: expiresAt - Math.min(this.#renewBeforeMs, lifetime / 4) };
  }

  #stored(): HeldToken | null {
    if (this.#options.mode !== 'anonymous' || this.#options.storage === undefined) return null;
    try {
      const stored = JSON.parse(this.#options.storage.getItem(this.#storageKey()) ?? 'null') as HeldToken | null;
      if (typeof stored?.accessToken !== 'string') return null;
      this.#held = stored;
      return stored;
    } catch {
      return null;
    }
  }

  #storageKey(): string {
    return `tessera:${this.appUrl}:anonymous-token`;
  }

  #basicHeader(): string {
    const options = this.#options;
    const password = options.mode === 'admin' ? '' : (options.appKey ?? 'anonymous');
    return `Basic ${base64(`${options.appId}:${password}`)}`;
  }

  #send(request: Request): Promise<Response> {
    const send = this.#options.fetch ?? ((input: Request) => globalThis.fetch(input));
    return send(request);
  }

  /** How long to wait before trying `response`'s request again, in ms; null: not again. */
  #retryWait(response: Response, attempt: number): number | null {
    if ((response.status !== 429 && response.status !== 503) || attempt >= this.#maxAttempts) return null;
    const seconds = retryAfterSeconds(response, this.#clock.now());
    return seconds === null || seconds > this.#maxWaitSeconds ? null : seconds * 1000;
  }
}

/** `Retry-After` in seconds (a number of seconds, or an HTTP date), or null when there is none. */
function retryAfterSeconds(response: Response, now: number): number | null {
  const value = response.headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return null;
  if (/^[0-9]+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - now) / 1000);
}

/** The contract's `errorCode` of an error answer, read from a copy (the answer's own body stays unread). */
async function errorCodeOf(response: Response): Promise<unknown> {
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { errorCode?: unknown } | null;
  return body?.errorCode;
}

/** A challenge of `GET …/attestation/challenge`: ALTCHA v2's, which the solver needs only the parameters of. */
interface PowChallenge {
  parameters: PowParameters;
  signature: string;
}

interface PowParameters {
  algorithm: string;
  cost: number;
  keyLength?: number;
  keyPrefix: string;
  nonce: string;
  salt: string;
}

interface PowSolution {
  counter: number;
  derivedKey: string;
}

/**
 * Solves an ALTCHA v2 challenge: in a web page, on as many workers as the device has cores (off the
 * main thread), each trying every n-th counter; in Node (or where a page may not start a worker),
 * here, yielding to the event loop every few milliseconds.
 */
async function solvePow(parameters: PowParameters): Promise<PowSolution> {
  const { Worker, Blob, document, navigator } = globalThis as unknown as PageGlobals;
  const found =
    Worker !== undefined && Blob !== undefined && document !== undefined
      ? await solveOnWorkers(parameters, { Worker, Blob, cores: navigator?.hardwareConcurrency ?? 1 }).catch(() => null)
      : null;
  const solution = found ?? (await findCounter(parameters, 0, 1, nodeDigest()));
  if (solution === null) throw new TesseraClientError('ATTESTATION_INVALID', 'The proof of work could not be solved.', 0);
  return solution;
}

/** What a web page has that the solver uses, typed here: the module has no DOM types (it builds for Node too). */
interface PageGlobals {
  document?: unknown;
  navigator?: { hardwareConcurrency?: number };
  Blob?: new (parts: string[], options: { type: string }) => object;
  Worker?: new (url: string) => PageWorker;
}

interface PageWorker {
  postMessage(message: unknown): void;
  terminate(): void;
  onmessage: ((event: { data: PowSolution | null }) => void) | null;
  onerror: ((event: { message: string }) => void) | null;
}

/**
 * Node's own hashes, faster than Web Crypto's promise per attempt (`process.getBuiltinModule`, which
 * imports nothing the served module could not load); undefined in a browser, and in a Node without it.
 */
function nodeDigest(): Digest | undefined {
  const { process: node } = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } };
  const crypto = node?.getBuiltinModule?.('node:crypto') as { createHash: typeof createHash } | undefined;
  if (crypto === undefined) return undefined;
  return (algorithm, data) => new Uint8Array(crypto.createHash(algorithm.replace('SHA-', 'sha').toLowerCase()).update(data).digest());
}

type Digest = (algorithm: string, data: Uint8Array) => Uint8Array;

function solveOnWorkers(
  parameters: PowParameters,
  page: { Worker: NonNullable<PageGlobals['Worker']>; Blob: NonNullable<PageGlobals['Blob']>; cores: number },
): Promise<PowSolution | null> {
  const source = `const findCounter = ${findCounter.toString()};
onmessage = async (event) => postMessage(await findCounter(event.data.parameters, event.data.start, event.data.step));`;
  const url = URL.createObjectURL(new page.Blob([source], { type: 'text/javascript' }) as Blob);
  const count = Math.max(1, Math.min(8, page.cores));
  const workers: PageWorker[] = [];
  try {
    for (let index = 0; index < count; index++) workers.push(new page.Worker(url));
  } finally {
    URL.revokeObjectURL(url);
  }
  const stop = () => workers.forEach((worker) => worker.terminate());
  return new Promise<PowSolution | null>((resolve, reject) => {
    let finished = 0;
    workers.forEach((worker, index) => {
      worker.onerror = (event) => {
        stop();
        reject(new Error(event.message));
      };
      worker.onmessage = (event) => {
        finished++;
        if (event.data !== null || finished === count) {
          stop();
          resolve(event.data);
        }
      };
      worker.postMessage({ parameters, start: index, step: count });
    });
  });
}

/**
 * The counters `start`, `start + step`, … until the derived key starts with the challenge's prefix
 * (ALTCHA v2: the password is the nonce and the counter as a big-endian 32-bit integer; the key is
 * `cost` rounds of the hash over salt and password, or PBKDF2). Self-contained: a worker runs its
 * source as it is.
 */
async function findCounter(parameters: PowParameters, start: number, step: number, digest?: Digest): Promise<PowSolution | null> {
  const bytes = (hex: string) => new Uint8Array((hex.match(/../g) ?? []).map((pair) => parseInt(pair, 16)));
  const hex = (data: Uint8Array) => Array.from(data, (byte) => byte.toString(16).padStart(2, '0')).join('');
  const { algorithm, cost, keyPrefix } = parameters;
  if (!/^[0-9a-fA-F]+$/.test(keyPrefix)) return null;
  const keyLength = parameters.keyLength ?? 32;
  const salt = bytes(parameters.salt);
  const nonce = bytes(parameters.nonce);
  // An odd number of hex digits compares its last half byte by itself.
  const prefix = bytes(keyPrefix.length % 2 === 0 ? keyPrefix : keyPrefix.slice(0, -1));
  const lastNibble = keyPrefix.length % 2 === 0 ? -1 : parseInt(keyPrefix.slice(-1), 16);
  const matches = (key: Uint8Array) => {
    for (let index = 0; index < prefix.length; index++) if (key[index] !== prefix[index]) return false;
    return lastNibble < 0 || key[prefix.length]! >> 4 === lastNibble;
  };
  const password = new Uint8Array(nonce.length + 4);
  password.set(nonce);
  const view = new DataView(password.buffer);
  const pbkdf2 = algorithm.startsWith('PBKDF2/');
  const hash = pbkdf2 ? algorithm.slice('PBKDF2/'.length) : algorithm;
  const salted = new Uint8Array(salt.length + password.length);
  salted.set(salt);
  let yieldedAt = Date.now();
  for (let counter = start; counter <= 0xffffffff; counter += step) {
    view.setUint32(nonce.length, counter, false);
    let key: Uint8Array;
    if (pbkdf2) {
      const material = await crypto.subtle.importKey('raw', password, 'PBKDF2', false, ['deriveBits']);
      key = new Uint8Array(await crypto.subtle.deriveBits({ name: 'PBKDF2', hash, salt, iterations: cost }, material, keyLength * 8));
    } else {
      salted.set(password, salt.length);
      key = digest ? digest(hash, salted) : new Uint8Array(await crypto.subtle.digest(hash, salted));
      for (let round = 1; round < cost; round++) key = digest ? digest(hash, key) : new Uint8Array(await crypto.subtle.digest(hash, key));
      key = key.subarray(0, keyLength);
    }
    if (matches(key)) return { counter, derivedKey: hex(key) };
    if (digest && Date.now() - yieldedAt > 20) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      yieldedAt = Date.now();
    }
  }
  return null;
}

/** Whether the answer refuses the token itself (RFC 6750 `invalid_token`; the contract's `INVALID_TOKEN`). */
async function isInvalidToken(response: Response): Promise<boolean> {
  if (response.status !== 401) return false;
  if (/error="?invalid_token/i.test(response.headers.get('www-authenticate') ?? '')) return true;
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { errorCode?: unknown } | null;
  return body?.errorCode === 'INVALID_TOKEN';
}

function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function requireText(value: unknown, name: string): void {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string.`);
}

function requireNumber(value: unknown, name: string, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min)
    throw new TypeError(`${name} must be a number of at least ${min}.`);
  return value;
}
