import type { LoadSpec } from './processes.js';

/** What a case measures: issuing a token, or checking one. Ratios compare a case to the ceiling of its kind. */
export type CaseKind = 'issue' | 'check';

/** One of the benchmark's goals, and whether a run met it. */
export interface TargetCheck {
  description: string;
  value: string;
  met: boolean;
}

export interface BenchCase {
  /** e.g. "tessera/sqlite: admin token" */
  name: string;
  /** ceiling, oidc-provider, tessera/sqlite, tessera/postgres */
  target: string;
  kind: CaseKind;
  load: Omit<LoadSpec, 'tokensFile'>;
  /** Collect and afterwards verify every token this case was answered with. */
  collectTokens?: boolean;
}

export const CEILING = 'ceiling';
export const PEER = 'oidc-provider';

export function ceilingCases(url: string, knownToken: string): BenchCase[] {
  return [
    {
      name: 'ceiling: issue (bare node:http)',
      target: CEILING,
      kind: 'issue',
      load: {
        url,
        method: 'POST',
        path: '/',
        body: '{"grant_type":"client_credentials","client_id":"x","client_secret":"y"}',
        contentType: 'application/json',
      },
    },
    {
      name: 'ceiling: check (Map lookup)',
      target: CEILING,
      kind: 'check',
      load: { url, method: 'GET', path: '/', authorization: `Bearer ${knownToken}` },
    },
  ];
}

export function peerCases(url: string, clientBasic: string, token: string): BenchCase[] {
  return [
    {
      name: 'oidc-provider: issue (client_credentials)',
      target: PEER,
      kind: 'issue',
      load: {
        url,
        method: 'POST',
        path: '/token',
        body: 'grant_type=client_credentials',
        contentType: 'application/x-www-form-urlencoded',
        authorization: clientBasic,
      },
    },
    {
      name: 'oidc-provider: introspect',
      target: PEER,
      kind: 'check',
      load: {
        url,
        method: 'POST',
        path: '/token/introspection',
        body: `token=${token}`,
        contentType: 'application/x-www-form-urlencoded',
        authorization: clientBasic,
      },
    },
  ];
}

export interface TesseraFixture {
  target: string;
  url: string;
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  adminToken: string;
  anonymousToken: string;
}

export function tesseraCases(f: TesseraFixture): BenchCase[] {
  const basic = `Basic ${Buffer.from(`${f.appId}:bench`).toString('base64')}`;
  const tokenPath = `/api/apps/${f.appId}/oauth2/token`;
  const whoami = `/api/apps/${f.appId}/whoami`;
  const tokenBody = (clientId: string, clientSecret: string) =>
    JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  return [
    {
      name: `${f.target}: admin token`,
      target: f.target,
      kind: 'issue',
      collectTokens: true,
      load: {
        url: f.url,
        method: 'POST',
        path: tokenPath,
        body: tokenBody(f.clientId, f.clientSecret),
        contentType: 'application/json',
        authorization: basic,
      },
    },
    {
      name: `${f.target}: anonymous token`,
      target: f.target,
      kind: 'issue',
      collectTokens: true,
      load: {
        url: f.url,
        method: 'POST',
        path: tokenPath,
        body: tokenBody(f.appId, f.appKey),
        contentType: 'application/json',
        authorization: basic,
      },
    },
    {
      name: `${f.target}: whoami, anonymous Bearer`,
      target: f.target,
      kind: 'check',
      load: { url: f.url, method: 'GET', path: whoami, authorization: `Bearer ${f.anonymousToken}` },
    },
    {
      name: `${f.target}: whoami, admin Bearer`,
      target: f.target,
      kind: 'check',
      load: { url: f.url, method: 'GET', path: whoami, authorization: `Bearer ${f.adminToken}` },
    },
    {
      name: `${f.target}: whoami, Basic`,
      target: f.target,
      kind: 'check',
      load: { url: f.url, method: 'GET', path: whoami, authorization: basic },
    },
    {
      name: `${f.target}: forward auth, anonymous Bearer`,
      target: f.target,
      kind: 'check',
      load: {
        url: f.url,
        method: 'GET',
        path: '/api/forward-auth',
        authorization: `Bearer ${f.anonymousToken}`,
        headers: { 'X-Original-URI': `/api/apps/${f.appId}/objects/1?x=1`, 'X-Original-Method': 'GET' },
      },
    },
  ];
}
