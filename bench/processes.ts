import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The server under test runs on this core, the load generator on the other. */
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;

export interface RunningServer {
  name: string;
  child: ChildProcess;
  url: string;
  /** The first JSON line the server printed (it carries the URL, and for the ceiling a known token). */
  announcement: Record<string, unknown>;
  /** Everything the server printed on stdout so far (its log lines). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `node <script> [args]` pinned to the server core and waits for its first JSON line on
 * stdout that names a URL (`url` or `listening`).
 */
export async function startPinnedServer(
  name: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
): Promise<RunningServer> {
  const child = spawn('taskset', ['-c', String(SERVER_CORE), process.execPath, ...nodeArgs, script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const line of stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        const url = (parsed.url ?? parsed.listening) as string | undefined;
        if (typeof url === 'string') {
          return {
            name,
            child,
            url,
            announcement: parsed,
            output: () => stdout,
            stop: () => stopProcess(child),
          };
        }
      } catch {
        // not a complete JSON line yet
      }
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not start: ${stderr || stdout}`);
    }
    await sleep(25);
  }
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Resident memory of a process, current and peak, in MB (Linux). */
export function memoryOf(pid: number): { rssMb: number; peakRssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 };
}

/**
 * The host sometimes pauses this machine's CPUs. A process spins on each core for one second and
 * reports the share of wall time it actually got; a low share marks the repetition unreliable.
 */
export async function cpuAvailability(): Promise<number> {
  const spinCode = `
    const start = process.hrtime.bigint(); const cpu0 = process.cpuUsage();
    while (process.hrtime.bigint() - start < 1_000_000_000n) {}
    const wallUs = Number(process.hrtime.bigint() - start) / 1000; const cpu = process.cpuUsage(cpu0);
    process.stdout.write(String((cpu.user + cpu.system) / wallUs));`;
  const shares = await Promise.all(
    [SERVER_CORE, LOAD_CORE].map(
      (core) =>
        new Promise<number>((resolve, reject) => {
          const child = spawn('taskset', ['-c', String(core), process.execPath, '-e', spinCode], { stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
          child.on('exit', (code) => (code === 0 ? resolve(Math.min(1, Number(out))) : reject(new Error('spin failed'))));
        }),
    ),
  );
  return Math.min(...shares);
}

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  contentType?: string;
  authorization?: string;
  /** More request headers. */
  headers?: Record<string, string>;
  /** Keep every access_token answered, written to this file. */
  tokensFile?: string;
}

export interface LoadResult {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p10: number; p50: number; p90: number; p99: number; p999: number; mean: number; max: number };
  tokens: number;
  requestsPerSecond: number;
}

const WRK_SCRIPT = fileURLToPath(new URL('../../bench/wrk/case.lua', import.meta.url));
const WRK_TAIL_SCRIPT = fileURLToPath(new URL('../../bench/wrk/tail.lua', import.meta.url));

/**
 * One wrk run from the load core, `connections` connections, `seconds` long. By default one
 * generator thread, with wrk's latencies; `timed` runs a thread per connection that times each
 * request on the monotonic clock (bench/wrk/tail.lua says why), for the tail.
 */
export async function runLoad(spec: LoadSpec, connections: number, seconds: number, timed = false): Promise<LoadResult> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BENCH_METHOD: spec.method,
    BENCH_PATH: spec.path,
    BENCH_BODY: spec.body ?? '',
    BENCH_CONTENT_TYPE: spec.contentType ?? '',
    BENCH_AUTHORIZATION: spec.authorization ?? '',
    BENCH_HEADERS: Object.entries(spec.headers ?? {})
      .map(([name, value]) => `${name}: ${value}`)
      .join('\n'),
    BENCH_COLLECT_TOKENS: spec.tokensFile === undefined ? '0' : '1',
    BENCH_TOKENS_FILE: spec.tokensFile ?? '',
    BENCH_WRK_DIR: dirname(WRK_SCRIPT),
  };
  const script = timed ? WRK_TAIL_SCRIPT : WRK_SCRIPT;
  const threads = timed ? connections : 1;
  const result = JSON.parse(await runWrk(script, spec.url, connections, seconds, env, 'BENCH_RESULT ', threads)) as Omit<
    LoadResult,
    'requestsPerSecond'
  >;
  return { ...result, requestsPerSecond: result.requests / (result.durationUs / 1e6) };
}

/**
 * wrk with a Lua `script` from the load core: `threads` generator threads, `connections`
 * connections, `seconds` long. Returns what the script printed after `marker` on a line of its own.
 */
export function runWrk(
  script: string,
  url: string,
  connections: number,
  seconds: number,
  env: NodeJS.ProcessEnv,
  marker: string,
  threads = 1,
): Promise<string> {
  const args = ['-c', String(LOAD_CORE), 'wrk', `-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', script, url];
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.split('\n').find((candidate) => candidate.startsWith(marker));
      if (code !== 0 || line === undefined) reject(new Error(`wrk failed (${code}): ${err || out}`));
      else resolve(line.slice(marker.length));
    });
  });
}

export function failuresOf(result: LoadResult): number {
  const e = result.errors;
  return e.connect + e.read + e.write + e.status + e.timeout;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Throws, naming the Debian package, unless wrk and taskset are installed; `who` names the caller in the message. */
export function requireTools(who: string): void {
  for (const [tool, args] of [
    ['wrk', ['--version']],
    ['taskset', ['--version']],
  ] as const) {
    if (spawnSync(tool, args, { stdio: 'ignore' }).error !== undefined) {
      throw new Error(`${who} needs ${tool}: apt-get install ${tool === 'wrk' ? 'wrk' : 'util-linux'}`);
    }
  }
}

/** What every measured `tessera serve` runs with: on loopback, a port the kernel picks, no limit, no demo app, no request log. */
export const MEASURED_SERVER_ENV: Readonly<Record<string, string>> = Object.freeze({
  HOST: '127.0.0.1',
  PORT: '0',
  RATE_LIMITS: 'off',
  DEMO_APP: 'off',
  LOG_LEVEL: 'info',
});
