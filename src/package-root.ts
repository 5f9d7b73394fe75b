import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root folder (compiled code runs from `dist/src/`). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

let version: string | undefined;

/** The package's version (package.json, read once), as `npm pack` names its tarball: `tessera-tokens-VERSION.tgz`. */
export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}
