/**
 * The ceiling: a bare node:http server doing the least a token service could do. POST reads and
 * parses the JSON body and answers a random 43-character token; GET looks a Bearer token up in a
 * Map. Tessera's figures are reported as ratios to these, measured in the same repetition.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const tokens = new Map<string, { appId: string; kind: string }>();
const KNOWN_TOKEN = 'ceilingTokenceilingTokenceilingTokenceiling'; // 43 characters
tokens.set(KNOWN_TOKEN, { appId: 'ceiling', kind: 'anonymous' });

const server = createServer((request, response) => {
  if (request.method === 'POST') {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const fields = JSON.parse(body) as { client_id?: string };
      const token = randomBytes(32).toString('base64url');
      tokens.set(token, { appId: String(fields.client_id), kind: 'anonymous' });
      const payload = JSON.stringify({ id: 'ANONYMOUS', access_token: token, expires_in: 2147483646, token_type: 'bearer' });
      response.writeHead(200, { 'content-type': 'application/json' }).end(payload);
    });
    return;
  }
  const principal = tokens.get((request.headers.authorization ?? '').slice(7));
  if (principal === undefined) {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"errorCode":"INVALID_TOKEN"}');
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(principal));
});

server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  if (address !== null && typeof address === 'object') {
    process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${address.port}`, token: KNOWN_TOKEN })}\n`);
  }
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
