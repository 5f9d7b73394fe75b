import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The server package's root folder (its compiled code runs from `dist/src/`). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

let version: string | undefined;

/** The server's version (package.json, read once), the library's too (`tessera-tokens`, packages/tessera-tokens/): `npm pack` names their tarballs `tessera-server-VERSION.tgz` and `tessera-tokens-VERSION.tgz`. */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}
