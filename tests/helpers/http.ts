import assert from 'node:assert/strict';
import type { AppAccessKeys } from '../../src/apps/access-keys.js';

// HTTP as the tests speak it to Tessera: a request answers its status, headers and body (as JSON
// where it is JSON); the two Authorization schemes; an app's URL; and the token endpoint of an app.

export interface JsonResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is not JSON. */
  body: any;
  text: string;
}

/** The text as JSON, or undefined when it is not JSON. */
export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fetch, then read the body as text and, where possible, as JSON. */
export async function request(url: string, init: RequestInit = {}): Promise<JsonResponse> {
  const response = await fetch(url, init);
  const text = await response.text();
  const body = parseJson(text);
  return { status: response.status, headers: response.headers, body, text };
}

/** A request to `url` with this Authorization header, or none when it is undefined. */
export function requestAs(url: string, authorization?: string, method = 'GET'): Promise<JsonResponse> {
  return request(url, { method, headers: authorization === undefined ? {} : { authorization } });
}

export function basic(user: string, password = 'anything'): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export function bearer(token: string): string {
  return `Bearer ${token}`;
}

/** Where an app's endpoints are: `${baseUrl}/api/apps/${appId}`. */
export function appUrlOf(baseUrl: string, appId: string): string {
  return `${baseUrl}/api/apps/${appId}`;
}

/** GET the app's whoami with this Authorization header (none when undefined). */
export function whoami(appUrl: string, authorization?: string): Promise<JsonResponse> {
  return requestAs(`${appUrl}/whoami`, authorization);
}

/** Whether the app's whoami accepts the token (200). */
export async function tokenWorks(appUrl: string, token: string): Promise<boolean> {
  return (await whoami(appUrl, bearer(token))).status === 200;
}

/** The id of the key an anonymous token is signed with: its bytes 1 and 2. */
export function signingKeyIdOf(anonymousToken: string): number {
  return Buffer.from(anonymousToken, 'base64url').readUInt16BE(1);
}

/** The keys of an app that its token requests need. */
export type AppCredentials = Pick<AppAccessKeys, 'appId' | 'appKey' | 'clientId' | 'clientSecret'>;

/** An app of a server under test: its keys and where its endpoints are. */
export interface AppEndpoint extends AppCredentials {
  appUrl: string;
}

/** The app a token request goes to: one at its `appUrl`, or a test server's own (`server.app`). */
export type AppTarget = AppEndpoint | { app: AppCredentials; appUrl: string };

/** The app, as an endpoint of the server at `baseUrl`. */
export function appOn<App extends AppCredentials>(server: { baseUrl: string }, app: App): App & { appUrl: string } {
  return { ...app, appUrl: appUrlOf(server.baseUrl, app.appId) };
}

function credentialsOf(target: AppTarget): AppCredentials {
  return 'app' in target ? target.app : target;
}

/** The admin token request's fields: the app's ClientID and ClientSecret. */
export function adminFields(target: AppTarget, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const app = credentialsOf(target);
  return { grant_type: 'client_credentials', client_id: app.clientId, client_secret: app.clientSecret, ...extra };
}

/** The anonymous token request's fields: the app's AppID and AppKey. */
export function anonymousFields(target: AppTarget, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const app = credentialsOf(target);
  return { grant_type: 'client_credentials', client_id: app.appId, client_secret: app.appKey, ...extra };
}

/** A JSON token request as the SDKs send it to `/api/apps/{appId}/oauth2/token`: `Basic AppID:` and the fields. */
export function tokenRequestInit(appId: string, fields: Record<string, unknown>, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { authorization: basic(appId), 'content-type': 'application/json', ...headers },
    body: JSON.stringify(fields),
  };
}

/** The app's token endpoint. */
export function tokenUrl(target: { appUrl: string }): string {
  return `${target.appUrl}/oauth2/token`;
}

/** POST a JSON token request to the app's token endpoint, with the Basic header of the app. */
export function requestToken(
  target: AppTarget,
  fields: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  return request(tokenUrl(target), tokenRequestInit(credentialsOf(target).appId, fields, headers));
}

/** The access token of a token request that must succeed. */
export async function issueToken(target: AppTarget, fields: Record<string, unknown>): Promise<string> {
  const response = await requestToken(target, fields);
  assert.equal(response.status, 200, response.text);
  return response.body.access_token as string;
}

/** A new admin token of the app, through the token endpoint. */
export function adminTokenOf(target: AppTarget, extra: Record<string, unknown> = {}): Promise<string> {
  return issueToken(target, adminFields(target, extra));
}

/** A new anonymous token of the app, through the token endpoint. */
export function anonymousTokenOf(target: AppTarget, extra: Record<string, unknown> = {}): Promise<string> {
  return issueToken(target, anonymousFields(target, extra));
}

/** How a request body is sent: JSON, or url-encoded as an HTML form (and OAuth2's RFCs) sends it. */
export type BodyEncoding = 'json' | 'form';

/** The fields url-encoded, each value as its string. */
export function formBody(fields: Record<string, unknown>): string {
  return new URLSearchParams(Object.entries(fields).map(([name, value]): [string, string] => [name, String(value)])).toString();
}

/** POST `body` to `url` with this Authorization header, as JSON or as a form (`body` then holds the fields). */
export function postAs(url: string, authorization: string, body: unknown, encoding: BodyEncoding = 'json'): Promise<JsonResponse> {
  return request(url, {
    method: 'POST',
    headers: { authorization, 'content-type': encoding === 'json' ? 'application/json' : 'application/x-www-form-urlencoded' },
    body: encoding === 'json' ? JSON.stringify(body) : formBody(body as Record<string, unknown>),
  });
}

/** POST the app's revocation endpoint `{"token": token}`, authenticated with the token itself unless told otherwise. */
export function revokeToken(
  appUrl: string,
  token: string,
  authorization = bearer(token),
  encoding: BodyEncoding = 'json',
): Promise<JsonResponse> {
  return postAs(`${appUrl}/oauth2/revoke`, authorization, { token }, encoding);
}

/** POST the app's introspection endpoint `{"token": token}`; `authorization` is the caller's (an admin, to be answered). */
export function introspectToken(
  appUrl: string,
  token: string,
  authorization: string,
  encoding: BodyEncoding = 'json',
): Promise<JsonResponse> {
  return postAs(`${appUrl}/oauth2/introspect`, authorization, { token }, encoding);
}

/**
 * `{"token.issued anonymous": 3, "token.refused attempted:admin invalid_client": 1, "token.refused - invalid_token": 1, …}`
 * of an answer of `/events/counts`: a refused attempt names what it asked to be, never an actor.
 */
export function countTotalsOf(response: JsonResponse): Record<string, number> {
  assert.equal(response.status, 200, response.text);
  const totals: Record<string, number> = {};
  for (const total of response.body.totals) {
    const who = total.principal ?? (total.attempted === null ? '-' : `attempted:${total.attempted}`);
    totals[[total.type, who, total.reason ?? ''].join(' ').trim()] = total.count;
  }
  return totals;
}
