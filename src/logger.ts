import { createRequire } from 'node:module';
import { isatty } from 'node:tty';
import pino, { type DestinationStream, type Logger } from 'pino';
import { ConfigError, type LogFormat } from './config.js';

/**
 * Logs on stdout, written off the request path so that logging never blocks one: JSON lines through
 * an asynchronous destination, or, for a person at a terminal, readable lines formatted by
 * pino-pretty in a worker thread. The paths below are censored wherever they appear, before either
 * format sees the entry; no code logs a body, and request URLs are logged without their query string.
 * `to` takes the JSON lines instead of stdout (the tests read them).
 */
export function createLogger(level: string, format: LogFormat, to?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-kii-appkey"]',
          'req.headers.cookie',
          '*.client_secret',
          '*.clientSecret',
          '*.access_token',
          '*.accessToken',
        ],
        censor: '[redacted]',
      },
      serializers: {
        req: (request: { method?: string; url?: string; ip?: string }) => ({
          method: request.method,
          path: request.url?.split('?')[0],
          remoteAddress: request.ip,
        }),
      },
    },
    to ?? destination(format),
  );
}

function destination(format: LogFormat): DestinationStream {
  // isatty, not process.stdout.isTTY: the logs write to fd 1 themselves, and process.stdout would open a second stream on it.
  const terminal = isatty(1);
  const pretty = format === 'pretty' || (format === 'auto' && terminal && prettyInstalled());
  if (!pretty) return pino.destination({ sync: false });
  if (!prettyInstalled()) {
    throw new ConfigError('LOG_FORMAT=pretty needs the package pino-pretty: install it beside tessera, or set LOG_FORMAT=json.');
  }
  // pino ends the worker, after writing what it holds, when the process exits.
  return pino.transport({
    target: 'pino-pretty',
    options: {
      destination: 1,
      colorize: terminal && process.env.NO_COLOR === undefined,
      translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: true,
    },
  });
}

/** pino-pretty is an optional package of the server: without it, a terminal gets JSON too. */
function prettyInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
