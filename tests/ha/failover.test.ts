import { describe, it } from 'node:test';
import { runFailoverScenario } from '../helpers/failover.js';
import { Children, cleanupsAfterAll, now } from '../helpers/fleet.js';
import { findHaBinaries, PATRONI_TIMINGS, startHaCluster } from '../helpers/patroni.js';
import { findPgbouncer, startPgbouncer } from '../helpers/pgbouncer.js';

// Tessera on a high-availability PostgreSQL as an operator builds it from Debian's packages: Patroni
// (two PostgreSQL 15 nodes in synchronous replication) on etcd, HAProxy routing to the primary by
// Patroni's GET /primary. One sequence of events (every connection of Tessera's on the primary
// terminated, a switchover, a crash of the primary's node) is watched at once by three setups, each
// with its own database and two instances under load (helpers/failover.ts says what must hold after
// each event): DATABASE_URL through HAProxy; DATABASE_URL through PgBouncer in transaction mode (in
// front of HAProxy) with DATABASE_DIRECT_URL through HAProxy; a multi-host DATABASE_URL naming both
// nodes, no proxy. One cluster and one run of the events for the three keep the file near a minute.

const children = new Children();
process.once('exit', () => children.killAllNow());
const cleanup = cleanupsAfterAll();

describe('a high-availability PostgreSQL (Patroni, etcd, HAProxy) fails over under load', () => {
  it(
    'through HAProxy, through PgBouncer with DATABASE_DIRECT_URL, and with a multi-host URL: terminated connections, a switchover, a crash of the primary: 200 or 503 only, serving again within 15 s, nothing acknowledged lost',
    { timeout: 180_000 },
    async () => {
      const startedAt = now();
      // Throw, naming the packages to install, if a binary is missing: this test never skips.
      const binaries = findHaBinaries();
      const pgbouncerBinary = findPgbouncer();
      if (pgbouncerBinary === undefined)
        throw new Error('pgbouncer is not installed (not on PATH, not /usr/sbin/pgbouncer): apt-get install -y pgbouncer');
      const cluster = await startHaCluster(binaries);
      cleanup(() => cluster.stop());
      // In front of HAProxy, so that it follows the primary as Tessera's other connections do. A login
      // that fails (HAProxy has no primary for a moment in a switchover) makes PgBouncer refuse every
      // client for server_login_retry: 15 s as installed, which alone would cost a switchover 15 s of
      // 503; docs/deployment.md tells operators to lower it, as here.
      const pgbouncer = await startPgbouncer(pgbouncerBinary, cluster.urlFor('postgres'), { serverLoginRetrySeconds: 1 });
      cleanup(() => pgbouncer.stop());
      cleanup(() => children.killAll());
      const clusterUpAt = now();

      await runFailoverScenario({
        cluster,
        children,
        setups: [
          { name: 'HAProxy', database: 'tessera_haproxy', settingsFor: (database) => ({ DATABASE_URL: cluster.urlFor(database) }) },
          {
            name: 'PgBouncer',
            database: 'tessera_pgbouncer',
            settingsFor: (database) => ({
              DATABASE_URL: pgbouncer.urlFor(cluster.urlFor(database)),
              DATABASE_DIRECT_URL: cluster.urlFor(database),
            }),
            poolerServerConnectionsLost: () => pgbouncer.serverConnectionsLost(),
          },
          {
            name: 'multi-host URL',
            database: 'tessera_multi_host',
            settingsFor: (database) => ({
              DATABASE_URL: cluster.multiHostUrlFor(database, { target_session_attrs: 'read-write', connect_timeout: '2' }),
            }),
          },
        ],
      });
      console.log(
        `[ha] Patroni ${JSON.stringify(PATRONI_TIMINGS)}: cluster and PgBouncer up in ${Math.round(clusterUpAt - startedAt)} ms, ` +
          `scenario ${Math.round(now() - clusterUpAt)} ms`,
      );
    },
  );
});
