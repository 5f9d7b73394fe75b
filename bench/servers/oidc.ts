/**
 * The peer: node-oidc-provider, the best-known JavaScript OAuth server, with one client allowed the
 * client_credentials grant, opaque access tokens (its default for that grant), its default
 * in-memory storage, and its introspection endpoint.
 */
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
import { OIDC_CLIENT } from './oidc-client.js';

const provider = new Provider('http://127.0.0.1', {
  clients: [
    {
      client_id: OIDC_CLIENT.clientId,
      client_secret: OIDC_CLIENT.clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  features: {
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    devInteractions: { enabled: false },
  },
});

const server = createServer(provider.callback());
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  if (address !== null && typeof address === 'object') {
    process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${address.port}` })}\n`);
  }
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
