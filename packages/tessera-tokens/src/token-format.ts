/** What an app's (or a credential's) tokens are: `opaque`, the seed's, or `jwt`, RFC 9068 access tokens that other services check offline. */
export const ACCESS_TOKEN_FORMATS = ['opaque', 'jwt'] as const;
export type AccessTokenFormat = (typeof ACCESS_TOKEN_FORMATS)[number];
