import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SnippetName } from '../../src/apps/snippets.js';
import { childEnvironment, REPO_ROOT } from './process.js';

// The portal's quickstarts as a developer uses them: each snippet taken out of the page's HTML as
// the copy button would copy it, and run as it is, in a folder of its own.

/** The text of an element's content in HTML as `html.ts` escapes it: the five entities, back. */
export function decodeHtml(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The snippet `name` of a page (`<pre data-snippet="name"><code>…</code></pre>`), as it would be copied. */
export function snippetOf(html: string, name: SnippetName | 'set-secret' | 'credential-token' | 'credential-node'): string {
  const match = new RegExp(`<pre [^>]*data-snippet="${name}"[^>]*><code>([\\s\\S]*?)</code></pre>`).exec(html);
  assert.ok(match !== null, `the page has the ${name} quickstart`);
  // The text as copied: the spans that keep words whole on a phone are no part of it.
  return decodeHtml(match[1]!.replace(/<[^>]*>/g, ''));
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The packages the snippets import, as a project that installed them has them: `tessera-tokens`
 * (this checkout's packages/tessera-tokens, as `npm install` of its packed tarball would put it), and the others from the
 * checkout's own node_modules (devDependencies). Node resolves a symlinked package from where it
 * really is, so their own dependencies are found there too.
 */
const PACKAGES: Record<string, string> = {
  'tessera-tokens': join(REPO_ROOT, 'packages', 'tessera-tokens'),
  'openid-client': join(REPO_ROOT, 'node_modules', 'openid-client'),
  'kii-cloud-sdk': join(REPO_ROOT, 'node_modules', 'kii-cloud-sdk'),
};

/**
 * Writes `files` into a new folder beside a `node_modules` of the snippets' packages, runs
 * `command` there (its arguments may name the files), and removes the folder.
 */
export async function runInProject(
  files: Record<string, string>,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  const folder = mkdtempSync(join(tmpdir(), 'tessera-quickstart-'));
  try {
    mkdirSync(join(folder, 'node_modules'));
    for (const [name, target] of Object.entries(PACKAGES)) symlinkSync(target, join(folder, 'node_modules', name), 'dir');
    for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
    const output = { stdout: join(folder, 'stdout.txt'), stderr: join(folder, 'stderr.txt') };
    const out = openSync(output.stdout, 'w');
    const err = openSync(output.stderr, 'w');
    try {
      const child = spawn(command, args, { cwd: folder, env: childEnvironment(env), stdio: ['ignore', out, err], timeout: 30_000 });
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stdout: readFileSync(output.stdout, 'utf8'), stderr: readFileSync(output.stderr, 'utf8') };
    } finally {
      closeSync(out);
      closeSync(err);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Runs a Node snippet as `file` (an ES module: `.mjs`) with `node`, this process's own. */
export function runNode(source: string, file: string, env: Record<string, string> = {}): Promise<RunResult> {
  return runInProject({ [file]: source }, process.execPath, [file], env);
}

/**
 * Runs commands with bash, as pasted into a terminal. A terminal's standard error can be opened
 * again by name (`tee /dev/stderr`, as the commands do): a file opened again would be emptied, and
 * the socket Node gives a child for a pipe cannot be opened, so the commands' output goes through
 * pipes of bash's own on its way to the files.
 */
export function runBash(source: string, env: Record<string, string> = {}, typed?: string): Promise<RunResult> {
  // What a person types at the commands' prompts (a `read`), a line each.
  const input = typed === undefined ? '' : ' < typed.txt';
  const throughPipes = `set -o pipefail; exec 3>&1; { bash commands.sh${input} | cat >&3; } 2>&1 | cat >&2`;
  return runInProject(
    { 'commands.sh': source, ...(typed === undefined ? {} : { 'typed.txt': `${typed}\n` }) },
    'bash',
    ['-c', throughPipes],
    env,
  );
}

/** The run went well: exit code 0. */
export function assertRan(result: RunResult, what: string): void {
  assert.equal(result.code, 0, `${what} failed:\n${result.stderr}\n${result.stdout}`);
}
