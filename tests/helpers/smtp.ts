import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeServer, listenOnLoopback } from './listen.js';
import { freePort } from './process.js';

// A real SMTP server for the mail tests: Debian's aiosmtpd (python3-aiosmtpd), run by the system's
// Python, writing each message it accepts to a folder of the test's own; and servers that
// misbehave (one that accepts connections and never says a word).

/** Debian's Python, which has aiosmtpd (a `python3` of pyenv first on the PATH may not). */
const PYTHON = '/usr/bin/python3';

const HANDLER = `
import os, sys, time, uuid, signal
from aiosmtpd.controller import Controller

folder, port = sys.argv[1], int(sys.argv[2])

class Keep:
    async def handle_DATA(self, server, session, envelope):
        name = os.path.join(folder, '%d-%s.eml' % (time.time_ns(), uuid.uuid4().hex))
        with open(name + '.part', 'wb') as out:
            out.write(envelope.original_content)
        os.rename(name + '.part', name)
        return '250 OK'

controller = Controller(Keep(), hostname='127.0.0.1', port=port)
controller.start()
print('ready', flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
controller.stop()
`;

/** A mail as the SMTP server received it. */
export interface ReceivedMail {
  to: string;
  subject: string;
  /** The body, decoded (quoted-printable), lines joined back. */
  text: string;
  /** Every http(s) link of the body. */
  links: string[];
}

export interface TestSmtpServer {
  readonly url: string;
  /** Every mail received so far, oldest first. */
  received(): ReceivedMail[];
  /** Waits for a mail that `matches` (within `timeoutMs`), and returns it. */
  waitFor(matches: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export async function startSmtpServer(): Promise<TestSmtpServer> {
  const folder = mkdtempSync(join(tmpdir(), 'tessera-smtp-'));
  const port = await freePort();
  const child = spawn(PYTHON, ['-c', HANDLER, folder, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`aiosmtpd exited (${code}) (apt-get install -y python3-aiosmtpd): ${errors}`)));
      child.once('error', reject);
    });
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  const received = () =>
    readdirSync(folder)
      .filter((name) => name.endsWith('.eml'))
      .sort()
      .map((name) => parseMail(readFileSync(join(folder, name), 'utf8')));
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    async waitFor(matches, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const found = received().find(matches);
        if (found !== undefined) return found;
        if (Date.now() > until) throw new Error(`no such mail within ${timeoutMs} ms; received: ${JSON.stringify(received(), null, 1)}`);
        await sleep(50);
      }
    },
    async close() {
      await stop(child);
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** A server that accepts connections and never answers: an SMTP server that hangs. */
export async function startSilentServer(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = await listenOnLoopback(
    createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }),
  );
  const { port } = server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    async close() {
      for (const socket of sockets) socket.destroy();
      await closeServer(server);
    },
  };
}

function parseMail(raw: string): ReceivedMail {
  const [head = '', ...rest] = raw.replace(/\r\n/g, '\n').split('\n\n');
  const headers = new Map<string, string>();
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  let text = rest.join('\n\n');
  if (/quoted-printable/i.test(headers.get('content-transfer-encoding') ?? '')) {
    text = Buffer.from(
      text.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/gi, (_whole, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      'latin1',
    ).toString('utf8');
  } else if (/base64/i.test(headers.get('content-transfer-encoding') ?? '')) {
    text = Buffer.from(text, 'base64').toString('utf8');
  }
  return {
    to: headers.get('to') ?? '',
    subject: decodeHeader(headers.get('subject') ?? ''),
    text,
    links: [...text.matchAll(/https?:\/\/\S+/g)].map((match) => match[0]),
  };
}

/** An RFC 2047 encoded header (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`), as nodemailer writes one that is not ASCII. */
function decodeHeader(value: string): string {
  return value.replace(/\?=\s+=\?/g, '?==?').replace(/=\?utf-8\?([qb])\?([^?]*)\?=/gi, (_whole, encoding: string, data: string) =>
    encoding.toLowerCase() === 'b'
      ? Buffer.from(data, 'base64').toString('utf8')
      : Buffer.from(
          data.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_hex, hex: string) => String.fromCharCode(parseInt(hex, 16))),
          'latin1',
        ).toString('utf8'),
  );
}
