import { BUILT_IN_SCOPES } from 'tessera-tokens/internal/credentials/scopes.js';

/** The client authentication methods every endpoint of an app accepts (RFC 6749 §2.3.1). */
const CLIENT_AUTHENTICATION_METHODS = ['client_secret_basic', 'client_secret_post'];

export { issuerOf } from 'tessera-tokens/internal/apps/issuer.js';

/**
 * An app's OAuth 2.0 Authorization Server Metadata (RFC 8414): each app is an issuer of its own, whose
 * one grant is `client_credentials`. `response_types_supported` is required by RFC 8414 and empty:
 * there is no authorization endpoint. `scopes_supported` names Tessera's own scopes, which a
 * credential's token request may ask for; an app's own scopes are its business, not advertised.
 */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    token_endpoint: `${issuer}/oauth2/token`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    introspection_endpoint: `${issuer}/oauth2/introspect`,
    jwks_uri: `${issuer}/jwks.json`,
    grant_types_supported: ['client_credentials'],
    response_types_supported: [],
    scopes_supported: BUILT_IN_SCOPES,
    token_endpoint_auth_methods_supported: CLIENT_AUTHENTICATION_METHODS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTHENTICATION_METHODS,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTHENTICATION_METHODS,
  };
}
