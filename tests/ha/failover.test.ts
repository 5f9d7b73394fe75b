import { describe, it } from 'node:test';
import { runFailoverScenario } from '../helpers/failover.js';
import { Children, cleanupsAfterAll, now } from '../helpers/fleet.js';
import { findHaBinaries, PATRONI_TIMINGS, startHaCluster } from '../helpers/patroni.js';

// Tessera on a high-availability PostgreSQL as an operator builds it from Debian's packages: Patroni
// (two PostgreSQL 15 nodes in synchronous replication) on etcd, HAProxy routing to the primary by
// Patroni's GET /primary. Two instances, DATABASE_URL through HAProxy, under load, while every
// connection of Tessera's on the primary is terminated, a switchover moves the primary, and the
// primary's node crashes (helpers/failover.ts says what must hold after each).

const children = new Children();
process.once('exit', () => children.killAllNow());
const cleanup = cleanupsAfterAll();

describe('a high-availability PostgreSQL (Patroni, etcd, HAProxy) fails over under load', () => {
  it(
    'through HAProxy: terminated connections, a switchover, a crash of the primary: 200 or 503 only, serving again within 15 s, nothing acknowledged lost',
    { timeout: 150_000 },
    async () => {
      const startedAt = now();
      // Throws, naming the packages to install, if a binary is missing: this test never skips.
      const binaries = findHaBinaries();
      const cluster = await startHaCluster(binaries);
      cleanup(() => cluster.stop());
      cleanup(() => children.killAll());
      const clusterUpAt = now();

      await runFailoverScenario({
        name: 'HAProxy',
        cluster,
        children,
        database: 'tessera',
        settingsFor: (database) => ({ DATABASE_URL: cluster.urlFor(database) }),
      });
      console.log(
        `[ha] Patroni ${JSON.stringify(PATRONI_TIMINGS)}: cluster up in ${Math.round(clusterUpAt - startedAt)} ms, ` +
          `scenario ${Math.round(now() - clusterUpAt)} ms`,
      );
    },
  );
});
