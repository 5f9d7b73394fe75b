/** An app's issuer identifier (RFC 8414): `{base}/api/apps/{appId}`, under which its endpoints are, and a JWT access token's `iss`. */
export function issuerOf(baseUrl: string, appId: string): string {
  return `${baseUrl}/api/apps/${encodeURIComponent(appId)}`;
}
