import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchedReads } from 'tessera-tokens/internal/store/batched-reads.js';

/** Reads over a Map, recording each batch it was asked for. */
function readsOf(values: Map<string, string>, maxBatch?: number) {
  const batches: string[][] = [];
  const reads = new BatchedReads<string, string>({
    readMany: async (keys) => {
      batches.push(keys);
      if (keys.includes('broken')) throw new Error('unreachable');
      return keys.flatMap((key) => (values.has(key) ? [values.get(key)!] : []));
    },
    keyOf: (key) => key,
    keyOfValue: (value) => value.slice(0, value.indexOf('=')),
    ...(maxBatch === undefined ? {} : { maxBatch }),
  });
  return { reads, batches };
}

const VALUES = new Map(['a', 'b', 'c'].map((key) => [key, `${key}=value of ${key}`]));

describe('BatchedReads', () => {
  it('reads what is asked for in one turn of the event loop in one batch, each key once', async () => {
    const { reads, batches } = readsOf(VALUES);
    const found = await Promise.all(['a', 'x', 'b', 'a', 'c'].map((key) => reads.read(key)));
    assert.deepEqual(found, ['a=value of a', undefined, 'b=value of b', 'a=value of a', 'c=value of c']);
    assert.deepEqual(batches, [['a', 'x', 'b', 'c']]);
  });

  it('reads what is asked for in the next turn in a batch of its own', async () => {
    const { reads, batches } = readsOf(VALUES);
    const first = reads.read('a');
    await new Promise((resolve) => setImmediate(resolve));
    const second = reads.read('b');
    assert.deepEqual(await Promise.all([first, second]), ['a=value of a', 'b=value of b']);
    assert.deepEqual(batches, [['a'], ['b']]);
  });

  it('sends a full batch at once, without waiting for the turn to end', async () => {
    const { reads, batches } = readsOf(VALUES, 2);
    const found = Promise.all(['a', 'b', 'c'].map((key) => reads.read(key)));
    assert.deepEqual(batches, [['a', 'b']]);
    assert.deepEqual(await found, ['a=value of a', 'b=value of b', 'c=value of c']);
    assert.deepEqual(batches, [['a', 'b'], ['c']]);
  });

  it('rejects every read of a batch that failed, and only those', async () => {
    const { reads } = readsOf(VALUES);
    const failed = ['a', 'broken'].map((key) => reads.read(key));
    for (const read of failed) await assert.rejects(read, /unreachable/);
    assert.equal(await reads.read('a'), 'a=value of a');
  });
});
