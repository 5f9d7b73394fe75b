import { createTransport } from 'nodemailer';
import type { MailMessage } from './message.js';

/** Where mail is sent through: the operator's SMTP server (`SMTP_URL`). */
export interface SmtpServer {
  host: string;
  port: number;
  /** `smtps://`: TLS from the first byte (port 465 by default). */
  secure: boolean;
  /** `?starttls=required`: refuse to send over a connection that STARTTLS did not upgrade. */
  requireTls: boolean;
  user: string | undefined;
  pass: string | undefined;
}

/**
 * How long each step with the SMTP server may take before the attempt fails (and is tried again
 * later): connecting, the server's greeting, and any silence of the socket afterwards. A server
 * that hangs costs one attempt these few seconds, never a request.
 */
export interface SmtpTimeouts {
  connectionMs: number;
  greetingMs: number;
  socketMs: number;
}

export const DEFAULT_SMTP_TIMEOUTS: Readonly<SmtpTimeouts> = Object.freeze({ connectionMs: 10_000, greetingMs: 10_000, socketMs: 20_000 });

/** What sends one mail; rejects when the server refuses it, or does not answer in time. */
export interface MailTransport {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * `SMTP_URL`: `smtp://[user:password@]host[:port]` (port 587 by default; STARTTLS whenever the
 * server offers it, its certificate checked), `?starttls=required` to send nothing without it, or
 * `smtps://…` (TLS from the start, port 465 by default). The user and password are percent-decoded.
 * Throws an `Error` whose message never holds the password.
 */
export function parseSmtpUrl(raw: string): SmtpServer {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('SMTP_URL must be a URL: smtp://user:password@host:587 or smtps://user:password@host:465.');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new Error(`SMTP_URL must start with smtp:// or smtps://, not ${url.protocol}//.`);
  if (url.hostname === '') throw new Error('SMTP_URL must name the host of the SMTP server.');
  const secure = url.protocol === 'smtps:';
  const unknown = [...url.searchParams.keys()].filter((key) => key !== 'starttls');
  const starttls = url.searchParams.get('starttls');
  if (unknown.length > 0 || (starttls !== null && (secure || starttls !== 'required'))) {
    throw new Error('SMTP_URL takes one option, ?starttls=required, and only with smtp://.');
  }
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
    secure,
    requireTls: starttls === 'required',
    user: url.username === '' ? undefined : decodeURIComponent(url.username),
    pass: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
}

/** Sends through the SMTP server with nodemailer, one connection per mail, within `timeouts`. */
export function smtpTransport(server: SmtpServer, from: string, timeouts: SmtpTimeouts = DEFAULT_SMTP_TIMEOUTS): MailTransport {
  const transporter = createTransport({
    host: server.host,
    port: server.port,
    secure: server.secure,
    requireTLS: server.requireTls,
    ...(server.user === undefined ? {} : { auth: { user: server.user, pass: server.pass ?? '' } }),
    connectionTimeout: timeouts.connectionMs,
    greetingTimeout: timeouts.greetingMs,
    socketTimeout: timeouts.socketMs,
    dnsTimeout: timeouts.connectionMs,
    logger: false,
  });
  return {
    async send(message) {
      await transporter.sendMail({ from, to: message.to, subject: message.subject, text: message.text });
    },
    close() {
      transporter.close();
    },
  };
}
