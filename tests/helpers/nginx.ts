import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { listenOnLoopback } from './listen.js';
import { accepts, findExecutable, freePort } from './process.js';

/** The nginx binary, on the PATH or in /usr/sbin. */
export const findNginx = (): string | undefined => findExecutable('nginx');

export interface RunningNginx {
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  /** nginx's error log and output so far, for failure messages. */
  log(): string;
  /** Stops nginx (and its worker) and removes its directory. */
  stop(): Promise<void>;
}

/** Where Debian's `libnginx-mod-http-js` puts nginx's JavaScript module (njs). */
export const NJS_MODULE = '/usr/lib/nginx/modules/ngx_http_js_module.so';

/**
 * nginx in the foreground as the current user, with everything it writes (pid, logs, temp files) in
 * a fresh temp dir. `httpConfig(port)` is the content of the `http {}` block; nginx listens on `port`.
 * `mainConfig` are lines of the main context, before any other (`load_module …;`). Relative paths
 * in the configuration are in the temp dir (nginx's prefix).
 */
export async function startNginx(
  binary: string,
  httpConfig: (port: number) => string,
  mainConfig: readonly string[] = [],
): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-nginx-'));
  // nginx opens its compiled-in default error log (relative to the prefix) before it reads -g.
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  const errorLog = join(dir, 'error.log');
  const temp = (name: string) => join(dir, name);
  const config = [
    ...mainConfig,
    // As root, workers would run as "nobody", which cannot enter this 0700 dir (temp files of large bodies).
    process.getuid?.() === 0 ? 'user root;' : '',
    'worker_processes 1;',
    'events { worker_connections 128; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${temp('client_body')};`,
    `  proxy_temp_path ${temp('proxy')};`,
    `  fastcgi_temp_path ${temp('fastcgi')};`,
    `  uwsgi_temp_path ${temp('uwsgi')};`,
    `  scgi_temp_path ${temp('scgi')};`,
    httpConfig(port),
    '}',
    '',
  ].join('\n');
  const configPath = join(dir, 'nginx.conf');
  writeFileSync(configPath, config);

  let output = '';
  const globals = `daemon off; pid ${join(dir, 'nginx.pid')}; error_log ${errorLog} info;`;
  const child = spawn(binary, ['-p', `${dir}/`, '-c', configPath, '-g', globals], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    let errors = '';
    try {
      errors = readFileSync(errorLog, 'utf8');
    } catch {
      // not written yet
    }
    return `${output}${errors}`;
  };

  const stop = async () => {
    await stopProcess(child, exited);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitForPort(port, child, 5_000);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\nconfig:\n${config}\nlog:\n${log()}`, { cause: error });
  }
  return { baseUrl: `http://127.0.0.1:${port}`, log, stop };
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited (${child.exitCode ?? child.signalCode})`);
    if (await accepts(port)) return;
    if (Date.now() > deadline) throw new Error(`nginx did not listen on port ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** SIGQUIT (graceful), then SIGTERM (fast): either way the master waits for its worker before it exits. */
async function stopProcess(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const within = (ms: number) =>
    Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
  child.kill('SIGQUIT');
  if (await within(2_000)) return;
  child.kill('SIGTERM');
  if (await within(2_000)) return;
  child.kill('SIGKILL');
  await exited;
}

/** What the upstream saw of one request. */
export interface Seen {
  method: string;
  url: string;
  identity: Record<string, string>;
  bodyBytes: number;
}

/** The application behind nginx: answers every request with what it saw of it. */
export function startUpstream(seen: Seen[]): Promise<Server> {
  const server = createServer((req, res) => {
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
    req.on('end', () => {
      const identity = Object.fromEntries(
        Object.entries(req.headers).filter((entry): entry is [string, string] => entry[0].startsWith('x-tessera-')),
      );
      const record: Seen = { method: req.method ?? '', url: req.url ?? '', identity, bodyBytes };
      seen.push(record);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(record));
    });
  });
  return listenOnLoopback(server);
}
