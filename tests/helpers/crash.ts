import Database from 'libsql';
import { errorProblems } from './assert.js';
import { call, describeOutcome, now, whoami, type CreatedApp, type Outcome } from './fleet.js';
import { bearer } from './http.js';

/**
 * What a crash test remembers of the answers it received before a `kill -9`, and what it expects
 * of each token afterwards. Only answers count: a request that got no answer (the process died
 * under it), or a 503 (PostgreSQL too slow for the deadline, possibly after the commit), may or may
 * not have taken effect, so the tokens it concerns may be either valid or refused afterwards, but
 * nothing else.
 */

export type TokenKind = 'admin' | 'anonymous';

export interface IssuedToken {
  token: string;
  kind: TokenKind;
  /** Which kill round issued it, for messages. */
  round: string;
  /** The token request: sent, and answered with 200 (now() of fleet.ts). */
  sentAt: number;
  receivedAt: number;
}

export interface Revocation {
  round: string;
  target: IssuedToken;
  outcome: Outcome;
}

export interface RevokeAll {
  round: string;
  outcome: Outcome;
}

/** After a restart: `valid` (whoami 200 as its principal), `refused` (401 INVALID_TOKEN), or `either`. */
export interface Expectation {
  state: 'valid' | 'refused' | 'either';
  why: string;
}

export class TokenLedger {
  readonly issued: IssuedToken[] = [];
  readonly revocations: Revocation[] = [];
  readonly revokeAlls: RevokeAll[] = [];
  /** Answers that no request of the load should get (a 5xx, an unexpected refusal): listed by the test. */
  readonly unexpected: string[] = [];
  /** Every answer of the load, by "what: status code". */
  readonly tally = new Map<string, number>();
  /** What restarted servers answered for each token (see `settle`). */
  readonly #settled = new Map<IssuedToken, { state: 'valid' | 'refused'; at: number; after: string }>();
  readonly #claimed = new Set<IssuedToken>();

  #count(what: string, outcome: Outcome): void {
    const answer = outcome.status !== 0 ? describeOutcome(outcome) : neverDelivered(outcome) ? 'connection refused' : 'no answer';
    const key = `${what}: ${answer}`;
    this.tally.set(key, (this.tally.get(key) ?? 0) + 1);
  }

  /** Records a token request's outcome; returns the token if it was answered 200. */
  recordIssue(kind: TokenKind, round: string, outcome: Outcome): IssuedToken | undefined {
    this.#count(`${kind} token`, outcome);
    if (inDoubt(outcome)) return undefined;
    const token = outcome.body?.access_token;
    if (outcome.status !== 200 || typeof token !== 'string') {
      this.unexpected.push(`${round}: ${kind} token request: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`);
      return undefined;
    }
    const issued = { token, kind, round, sentAt: outcome.sentAt, receivedAt: outcome.receivedAt };
    this.issued.push(issued);
    return issued;
  }

  /**
   * A revocation's outcome. 200, or 401 INVALID_TOKEN when the token (sent as the Bearer too) was
   * already gone: an anonymous one removed by a revoke-all.
   */
  recordRevocation(round: string, target: IssuedToken, outcome: Outcome): void {
    this.#count('revocation', outcome);
    if (neverDelivered(outcome)) return;
    this.revocations.push({ round, target, outcome });
    if (inDoubt(outcome) || outcome.status === 200) return;
    if (target.kind === 'anonymous' && errorProblems(outcome, 401, 'INVALID_TOKEN').length === 0) return;
    this.unexpected.push(`${round}: revocation of a ${target.kind} token: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`);
  }

  recordRevokeAll(round: string, outcome: Outcome): void {
    this.#count('revoke-all', outcome);
    if (neverDelivered(outcome)) return;
    this.revokeAlls.push({ round, outcome });
    if (!inDoubt(outcome) && outcome.status !== 200) {
      this.unexpected.push(`${round}: revoke-all: ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`);
    }
  }

  /** Marks a token as about to be revoked, so that no other revocation picks it too (see `unclaimed`). */
  claim(issued: IssuedToken): void {
    this.#claimed.add(issued);
  }

  /** Tokens that must be valid now and that no revocation has claimed: candidates to revoke. */
  unclaimed(): IssuedToken[] {
    return this.issued.filter((issued) => !this.#claimed.has(issued) && this.expect(issued).state === 'valid');
  }

  /**
   * What a restarted server answered for a token: from then on, that is its state (a later crash
   * must not bring a refused token back, nor lose a valid one), whatever came of the requests sent
   * before, answered or not; only the requests sent after `at` may change it.
   */
  settle(issued: IssuedToken, state: 'valid' | 'refused', at: number, after: string): void {
    this.#settled.set(issued, { state, at, after });
  }

  expect(issued: IssuedToken): Expectation {
    const settled = this.#settled.get(issued);
    if (settled?.state === 'refused') return { state: 'refused', why: `it was refused after the restart of ${settled.after}` };
    const since = settled?.at ?? -Infinity;
    const refused: string[] = [];
    const uncertain: string[] = [];
    for (const { round, target, outcome } of this.revocations) {
      if (target !== issued || outcome.sentAt < since) continue;
      if (outcome.status === 200) refused.push(`its revocation was answered 200 (${round})`);
      else if (outcome.status === 401) refused.push(`it was already refused when its revocation was sent (${round})`);
      else uncertain.push(`its revocation got ${describeOutcome(outcome)} (${round})`);
    }
    if (issued.kind === 'anonymous') {
      for (const { round, outcome } of this.revokeAlls) {
        if (outcome.sentAt < since) continue;
        if (outcome.status === 200) {
          if (issued.receivedAt < outcome.sentAt)
            refused.push(`a revoke-all of anonymous tokens sent after its 200 was answered 200 (${round})`);
          else if (issued.sentAt < outcome.receivedAt) uncertain.push(`issued while a revoke-all ran (${round})`);
        } else if (inDoubt(outcome) && issued.sentAt < outcome.receivedAt) {
          uncertain.push(`a revoke-all got no answer or a 503 (${round})`);
        }
      }
    }
    if (refused.length > 0) return { state: 'refused', why: refused.join('; ') };
    if (uncertain.length > 0) return { state: 'either', why: uncertain.join('; ') };
    const origin = settled === undefined ? `answered 200 (${issued.round})` : `valid after the restart of ${settled.after}`;
    return { state: 'valid', why: `${origin}, not revoked since` };
  }
}

export interface Verification {
  counts: Record<Expectation['state'], number>;
  /** How many tokens the restarted server found valid, and refused. */
  found: { valid: number; refused: number };
  problems: string[];
  /** The anonymous tokens an unanswered (or 503) revoke-all concerned, all valid or all refused (one statement). */
  unansweredRevokeAlls: string[];
  ms: number;
}

/**
 * whoami with every token of the ledger on the restarted server, `concurrency` at a time, and
 * the comparison with what the ledger expects of each; then what was found is settled in the
 * ledger (see `settle`), to hold after the next crash. Call it with no load running.
 */
export async function verifyTokens(
  baseUrl: string,
  app: CreatedApp,
  ledger: TokenLedger,
  round: string,
  concurrency = 24,
): Promise<Verification> {
  const startedAt = now();
  const counts = { valid: 0, refused: 0, either: 0 };
  const found = { valid: 0, refused: 0 };
  const problems: string[] = [];
  const outcomes = new Map<IssuedToken, 'valid' | 'refused'>();
  const tokens = [...ledger.issued];
  let next = 0;
  const worker = async () => {
    while (next < tokens.length) {
      const issued = tokens[next++]!;
      const expectation = ledger.expect(issued);
      counts[expectation.state]++;
      const outcome = await whoami(baseUrl, app.appId, issued.token);
      const valid = isPrincipal(outcome, app, issued.kind);
      const refused = errorProblems(outcome, 401, 'INVALID_TOKEN').length === 0;
      if (valid) found.valid++;
      if (refused) found.refused++;
      if (valid || refused) outcomes.set(issued, valid ? 'valid' : 'refused');
      const ok = expectation.state === 'valid' ? valid : expectation.state === 'refused' ? refused : valid || refused;
      if (!ok) {
        problems.push(
          `${issued.kind} token of ${issued.round}, answered 200 at ${Math.round(issued.receivedAt)} ms: expected ${expectation.state} ` +
            `(${expectation.why}), got ${describeOutcome(outcome)} ${outcome.text.slice(0, 200)}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));

  // An unanswered revoke-all is one DELETE statement: it removed every earlier anonymous token or none.
  const unansweredRevokeAlls: string[] = [];
  for (const { round, outcome } of ledger.revokeAlls) {
    if (!inDoubt(outcome)) continue;
    const concerned = ledger.issued.filter((issued) => {
      if (issued.kind !== 'anonymous' || issued.receivedAt >= outcome.sentAt) return false;
      const expectation = ledger.expect(issued);
      return expectation.state === 'either' && expectation.why === `a revoke-all got no answer or a 503 (${round})`;
    });
    if (concerned.length === 0) continue;
    const refused = concerned.filter((issued) => outcomes.get(issued) === 'refused').length;
    const summary = `${round}: revoke-all answered ${describeOutcome(outcome)}: ${refused} of ${concerned.length} earlier anonymous tokens refused`;
    unansweredRevokeAlls.push(summary);
    if (refused !== 0 && refused !== concerned.length)
      problems.push(`${summary}: neither all nor none (a partial revoke-all, or lost tokens)`);
  }
  for (const [issued, state] of outcomes) ledger.settle(issued, state, startedAt, round);
  return { counts, found, problems, unansweredRevokeAlls, ms: Math.round(now() - startedAt) };
}

/** A request sent after the kill to a port nobody listens on any more: it cannot have had an effect. */
function neverDelivered(outcome: Outcome): boolean {
  return outcome.status === 0 && (outcome.error ?? '').includes('ECONNREFUSED');
}

/** No answer, or 503 SERVICE_UNAVAILABLE: whether the request took effect is not known. */
function inDoubt(outcome: Outcome): boolean {
  return outcome.status === 0 || errorProblems(outcome, 503, 'SERVICE_UNAVAILABLE').length === 0;
}

function isPrincipal(outcome: Outcome, app: CreatedApp, kind: TokenKind): boolean {
  const body = outcome.body;
  return (
    outcome.status === 200 &&
    body?.appId === app.appId &&
    body?.principal === kind &&
    body?.id === (kind === 'admin' ? app.adminId : 'ANONYMOUS') &&
    body?.auth === 'bearer'
  );
}

/** POST /api/apps/{appId}/oauth2/revoke with body {token}, authenticated with `as` (the token itself by default). */
export function revokeRequest(baseUrl: string, appId: string, token: string, as = token, timeoutMs?: number): Promise<Outcome> {
  return call(
    `${baseUrl}/api/apps/${appId}/oauth2/revoke`,
    {
      method: 'POST',
      headers: { authorization: bearer(as), 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    },
    timeoutMs,
  );
}

/** DELETE /api/apps/{appId}/tokens?kind=KIND with an admin token. */
export function revokeAllRequest(baseUrl: string, appId: string, adminToken: string, kind: TokenKind): Promise<Outcome> {
  return call(`${baseUrl}/api/apps/${appId}/tokens?kind=${kind}`, { method: 'DELETE', headers: { authorization: bearer(adminToken) } });
}

/** `PRAGMA integrity_check` of a SQLite file, through libsql: `['ok']` for a sound file. */
export function sqliteIntegrity(path: string): string[] {
  const db = new Database(path);
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    return (db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[]).map((row) => row.integrity_check);
  } finally {
    db.close();
  }
}
