import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serviceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { DEFAULT_HOUSEKEEPING } from '../../src/housekeeping.js';
import { createTessera } from '../../src/tessera.js';
import { NO_LIMITS } from '../helpers/server.js';
import { createSqliteTestStore } from '../helpers/store.js';

// What an instance logs when housekeeping fails: while the database is away (a failover), one line
// that says so, without the 503's stack; any other failure with its error.

const AWAY = serviceUnavailable();
const BROKEN = new Error('disk I/O error');

describe('housekeeping failures, as warnings', () => {
  for (const [what, failure, expected] of [
    [
      'the database away',
      AWAY,
      ['housekeeping could not run while the database cannot be reached; it is tried again at the next interval', undefined],
    ],
    ['another failure', BROKEN, ['housekeeping failed; it is tried again at the next interval', BROKEN]],
  ] as const) {
    it(`${what}: ${expected[0]}`, async () => {
      const testStore = await createSqliteTestStore();
      const warnings: [string, unknown][] = [];
      const tessera = createTessera({
        store: testStore.store,
        rateLimits: NO_LIMITS,
        housekeeping: { ...DEFAULT_HOUSEKEEPING, intervalMs: 10 },
        onWarning: (message, error) => warnings.push([message, error]),
      });
      testStore.store.tokens.deleteExpired = () => Promise.reject(failure);
      try {
        tessera.housekeeping.start();
        const deadline = Date.now() + 2_000;
        while (warnings.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
        assert.deepEqual(warnings[0], expected);
      } finally {
        await tessera.close();
        await testStore.dispose();
      }
    });
  }
});
