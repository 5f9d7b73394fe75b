import type { StoredJwtKey } from '../../jwt/keys.js';
import type { JwtAlgorithm } from '../../jwt/access-token.js';
import type { SqlRunner } from './runner.js';

// How the JWT keys are read: by the server's key store (src/store/sql/jwt-keys.ts) and by what
// checking reads (./checking-reads.ts).

export interface JwtKeyRow {
  kid: string;
  algorithm: JwtAlgorithm;
  public_jwk: string;
  private_key: Uint8Array | null;
  created_at: number;
  signs_from: number;
  published_until: number | null;
}

export const JWT_KEY_COLUMNS = 'kid, algorithm, public_jwk, private_key, created_at, signs_from, published_until';

/** Every JWT key, by creation. */
export async function listJwtKeys(db: SqlRunner): Promise<StoredJwtKey[]> {
  return (await db.all<JwtKeyRow>(`SELECT ${JWT_KEY_COLUMNS} FROM jwt_keys ORDER BY created_at, kid`)).map(toJwtKey);
}

export function toJwtKey(row: JwtKeyRow): StoredJwtKey {
  return {
    kid: row.kid,
    algorithm: row.algorithm,
    publicJwk: JSON.parse(row.public_jwk) as Record<string, string>,
    encryptedPrivateKey: row.private_key === null ? null : Buffer.from(row.private_key),
    createdAt: Number(row.created_at),
    signsFrom: Number(row.signs_from),
    publishedUntil: row.published_until === null ? null : Number(row.published_until),
  };
}
