/** A JSON column: PostgreSQL's `jsonb` arrives parsed, SQLite's text does not. */
export function jsonColumn<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/**
 * A bytes column as a Buffer of its own (PostgreSQL's driver gives a Buffer, libsql an ArrayBuffer or
 * a Buffer). Not `Buffer.from`, which copies small values into Node's shared 8 KiB pool: a record
 * kept in a cache would keep the whole slab alive, 8 KiB for a 32-byte digest.
 */
export function bytesColumn(value: Uint8Array | ArrayBuffer): Buffer {
  const source = value instanceof ArrayBuffer ? new Uint8Array(value) : value;
  const bytes = Buffer.allocUnsafeSlow(source.byteLength);
  bytes.set(source);
  return bytes;
}
