// The token of a one-time link (a password link, an invitation), as its pages read it from the
// query of the GET and from the form of the POST.

/** The route shape of a link's page: `?token=…`. */
export type TokenQuery = { Querystring: { token?: string } };

/** A link token is two base64url parts of 22 and 43 characters: anything much longer is not one. */
const MAX_TOKEN_LENGTH = 200;

/** The token as given, or '' (a token that works for nothing) when there is none or it is far too long. */
export function linkToken(token: string | undefined): string {
  return token === undefined || token.length > MAX_TOKEN_LENGTH ? '' : token;
}
