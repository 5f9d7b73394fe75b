import { after, before } from 'node:test';

/** The starts of `forSuite`, one after the other (see below). */
let starts: Promise<unknown> = Promise.resolve();

/**
 * What `start` resolves with, for the tests of the suite this is called in (a file, or a describe
 * block): started in its before() hook, which then runs `setUp` with it; closed in its after() hook.
 * Its fields are copied (`start` resolves with a plain object) once before() has run. Each start
 * waits for those of earlier calls, so that a `setUp` may use them: at a file's top level, Node 20
 * runs before() hooks at the same time, which is also why set-up that needs what was started belongs
 * in `setUp` rather than in a before() hook of its own.
 */
export function forSuite<Started extends { close(): Promise<void> }>(
  start: () => Promise<Started>,
  setUp?: (started: Started) => Promise<unknown>,
): Started {
  const shared = {} as Started;
  let started: Started | undefined;
  before(() => {
    const starting = starts.then(async () => {
      started = await start();
      Object.assign(shared, started);
      await setUp?.(shared);
    });
    starts = starting.catch(() => {});
    return starting;
  });
  after(() => started?.close());
  return shared;
}
