import type { Clock } from '../../src/clock.js';

/** A clock that stands still until a test moves it. */
export class FakeClock implements Clock {
  constructor(public time = Date.parse('2026-06-01T00:00:00.000Z')) {}
  now(): number {
    return this.time;
  }
  advance(ms: number): void {
    this.time += ms;
  }
}
