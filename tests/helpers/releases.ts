import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './process.js';

const run = promisify(execFile);

/** A build of Tessera other than this checkout's: where it is, its release, and its CLI's entry (`serve` and the commands). */
export interface OtherBuild {
  dir: string;
  version: string;
  /** Its compiled `src/cli/main.js`, for `startServerProcess` and `runCli`. */
  entry: string;
}

/** Only the sources: tests and benchmarks of another build are not compiled. */
const TSCONFIG = {
  compilerOptions: {
    target: 'es2023',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2023'],
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    esModuleInterop: true,
    skipLibCheck: true,
    rootDir: '.',
    outDir: 'dist',
  },
  include: ['src'],
};

/** The library's build (packages/tessera-tokens/): its sources alone, with the declarations the server compiles against. */
const LIBRARY_TSCONFIG = {
  compilerOptions: { ...TSCONFIG.compilerOptions, rootDir: 'src', outDir: 'dist', declaration: true },
  include: ['src'],
};

/**
 * Compiles the build in `dir` with this checkout's TypeScript and dependencies (a release's
 * dependencies are a subset of today's). Without `node_modules` ready, this checkout's are linked.
 */
async function compile(dir: string, tsconfig: object = TSCONFIG, { linkModules = true } = {}): Promise<void> {
  if (linkModules) symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc6');
  try {
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`compiling the build in ${dir} failed: ${stdout ?? ''}${stderr ?? ''}`, { cause: error });
  }
}

/**
 * A previous release, built from its commit in this repository's history (`git archive`): the
 * release that a rolling upgrade starts from. Fails, saying so, where the history lacks it (a
 * shallow clone).
 */
export async function buildRelease(commit: string, dir: string): Promise<OtherBuild> {
  try {
    await run('git', ['-C', REPO_ROOT, 'cat-file', '-e', `${commit}^{commit}`]);
  } catch (error) {
    throw new Error(`commit ${commit} is not in this clone's history (a shallow clone?): fetch it, e.g. git fetch --unshallow`, {
      cause: error,
    });
  }
  mkdirSync(dir, { recursive: true });
  await run('sh', ['-c', `git -C "$1" archive "$2" src bin docs/openapi.json package.json | tar -x -C "$3"`, 'sh', REPO_ROOT, commit, dir]);
  await compile(dir);
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  return { dir, version, entry: join(dir, 'dist', 'src', 'cli', 'main.js') };
}

/**
 * This checkout as the next release would be: version `version`, with one more migration of both
 * dialects (`sql`), which says that this checkout's release may still serve on the schema it makes
 * (an expand migration). What a roll to a later release, and a rollback from it, are tested with.
 */
export async function buildNextRelease(dir: string, version: string, sql: string): Promise<OtherBuild> {
  mkdirSync(dir, { recursive: true });
  for (const part of [
    'src',
    'bin',
    'assets',
    'docs/openapi.json',
    'package.json',
    'packages/tessera-tokens/src',
    'packages/tessera-tokens/package.json',
  ]) {
    cpSync(join(REPO_ROOT, part), join(dir, part), { recursive: true });
  }
  const library = join(dir, 'packages', 'tessera-tokens');
  const currentVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const packageJson = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...packageJson, version }, null, 2));
  const libraryJson = JSON.parse(readFileSync(join(library, 'package.json'), 'utf8')) as { version: string };
  writeFileSync(join(library, 'package.json'), JSON.stringify({ ...libraryJson, version }, null, 2));

  // The release and its schema version are the library's (release.ts).
  const releaseFile = join(library, 'src', 'release.ts');
  const release = readFileSync(releaseFile, 'utf8');
  const schemaVersion = Number(/export const SCHEMA_VERSION = (\d+);/.exec(release)?.[1]);
  const next = schemaVersion + 1;
  writeFileSync(
    releaseFile,
    release
      .replace(/export const SCHEMA_VERSION = \d+;/, `export const SCHEMA_VERSION = ${next};`)
      .replace(/export const OLDEST_RELEASE_SERVED = '[^']*';/, `export const OLDEST_RELEASE_SERVED = '${currentVersion}';`),
  );
  for (const dialect of ['postgres', 'sqlite']) {
    const file = join(dir, 'src', 'store', dialect, 'migrations.ts');
    const text = readFileSync(file, 'utf8');
    const end = text.lastIndexOf('];');
    writeFileSync(file, `${text.slice(0, end)}  { version: ${next}, sql: ${JSON.stringify(sql)} },\n${text.slice(end)}`);
  }
  // Its own node_modules: this checkout's packages, but its own library in place of this checkout's.
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(REPO_ROOT, 'node_modules'))) {
    if (entry === 'tessera-tokens' || entry === '.bin') continue;
    symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  symlinkSync(library, join(dir, 'node_modules', 'tessera-tokens'));
  await compile(library, LIBRARY_TSCONFIG, { linkModules: false });
  await compile(dir, TSCONFIG, { linkModules: false });
  writeFileSync(join(library, 'dist', 'build-info.json'), JSON.stringify({ commit: `next-${next}` }));
  return { dir, version, entry: join(dir, 'dist', 'src', 'cli', 'main.js') };
}
