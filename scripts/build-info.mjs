// Written after `tsc` by `npm run build`: which commit the build was made from, so that
// `tessera --version`, the start-up line and `tessera_build_info` tell builds of one release apart.
// TESSERA_COMMIT names it where the build has no .git (a container image built from a tarball).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

function gitCommit() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty === '' ? commit : `${commit}-dirty`;
  } catch {
    return 'unknown';
  }
}

const commit = process.env.TESSERA_COMMIT?.trim() || gitCommit();
// Beside release.js, which reads it: in the library's build (packages/tessera-tokens/dist/).
writeFileSync(new URL('../packages/tessera-tokens/dist/build-info.json', import.meta.url), `${JSON.stringify({ commit })}\n`);
