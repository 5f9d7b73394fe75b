import { fileURLToPath } from 'node:url';

/** The package's root folder (compiled code runs from `dist/src/`). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
