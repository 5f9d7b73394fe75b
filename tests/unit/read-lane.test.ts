import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_READS_PER_APP, ReadLane } from '../../src/events/read-lane.js';

// Filtered reads of the audit log take turns, a step per turn of the event loop (src/events/read-lane.ts).

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('ReadLane', () => {
  it('runs one step at a time, each in a turn of the event loop of its own, so that what waits meanwhile runs between them', async () => {
    const lane = new ReadLane();
    const order: string[] = [];
    const read = (name: string) =>
      lane.run(name, async (step) => {
        for (let i = 0; i < 3; i++) await step(() => order.push(`${name}${i}`));
      });
    // Something else the event loop has to do, once a turn: it gets a turn between any two steps.
    let others = 0;
    let running = true;
    const other = (async () => {
      while (running) {
        order.push(`other${others++}`);
        await turn();
      }
    })();
    await Promise.all([read('a'), read('b')]);
    running = false;
    await other;
    const steps = order.filter((entry) => !entry.startsWith('other'));
    assert.deepEqual(steps, ['a0', 'b0', 'a1', 'b1', 'a2', 'b2'], 'first come, first served, step by step');
    for (let i = 1; i < order.length; i++) {
      const twoSteps = !order[i - 1]!.startsWith('other') && !order[i]!.startsWith('other');
      assert.ok(!twoSteps, `two steps in a row without a turn between: ${order.join(' ')}`);
    }
  });

  it('holds a step that waits (a query of PostgreSQL) until it ends: one step in the process at a time', async () => {
    const lane = new ReadLane();
    let inStep = 0;
    let most = 0;
    const read = (name: string) =>
      lane.run(name, async (step) => {
        for (let i = 0; i < 3; i++) {
          await step(async () => {
            most = Math.max(most, ++inStep);
            await new Promise((resolve) => setTimeout(resolve, 2));
            inStep--;
          });
        }
      });
    await Promise.all([read('a'), read('b'), read('c')]);
    assert.equal(most, 1);
  });

  it(`lets an app have ${MAX_READS_PER_APP} reads in the lane at once; one more is 429 TOO_MANY_REQUESTS, and another app's is not`, async () => {
    const lane = new ReadLane();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const reads = Array.from({ length: MAX_READS_PER_APP }, () => lane.run('busy', () => held));
    await assert.rejects(
      lane.run('busy', async () => {}),
      (error: { code?: string; status?: number; details?: { retryAfterSeconds?: number } }) =>
        error.code === 'TOO_MANY_REQUESTS' && error.status === 429 && error.details?.retryAfterSeconds === 1,
    );
    assert.equal(await lane.run('quiet', async () => 'answered'), 'answered');
    release();
    await Promise.all(reads);
    assert.equal(await lane.run('busy', async () => 'again'), 'again', 'once they are answered, it reads again');
  });
});
