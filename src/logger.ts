import pino, { type Logger } from 'pino';

/**
 * JSON logs on stdout, written asynchronously so that logging never blocks a request. The paths
 * below are censored wherever they appear; no code logs a body, and request URLs are logged without
 * their query string.
 */
export function createLogger(level: string): Logger {
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
    pino.destination({ sync: false }),
  );
}
