import type { Clock } from 'tessera-tokens/internal/clock.js';
import { T0 } from './fixtures.js';

/** A clock that stands still until a test moves it. */
export class FakeClock implements Clock {
  constructor(public time = T0) {}
  now(): number {
    return this.time;
  }
  advance(ms: number): void {
    this.time += ms;
  }
}
