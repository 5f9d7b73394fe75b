/**
 * Preloaded into the server under soak (`node --import <this file> …`, see bench/soak.ts): every
 * SOAK_PROBE_INTERVAL_MS (10 s) it appends one JSON line to SOAK_PROBE_FILE with the event-loop
 * delay of that interval, the process's memory, and the responses it sent; and on SIGUSR2, a line for
 * the interval so far (bench/tail.ts marks each scenario's start and end so). With
 * SOAK_PROBE_INTERVAL_MS=0 only on SIGUSR2. Nothing in the server changes; without SOAK_PROBE_FILE
 * this module does nothing.
 */
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface ProbeLine {
  /** UNIX ms when the line was written. */
  at: number;
  intervalMs: number;
  /** Event-loop delay over the interval (ms): how late a 10 ms timer fired, beyond its 10 ms. */
  eventLoopDelayMs: { p50: number; p99: number; max: number; mean: number };
  memoryMb: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
  /** Responses finished during the interval, by status. */
  responses: number;
  statuses: Record<string, number>;
}

const file = process.env.SOAK_PROBE_FILE;
if (file !== undefined && file !== '') {
  const intervalMs = Number(process.env.SOAK_PROBE_INTERVAL_MS ?? 10_000);
  // The histogram records each sampling timer's whole period: the delay is what exceeds it.
  const resolutionMs = Number(process.env.SOAK_PROBE_RESOLUTION_MS ?? 10);
  const delay = monitorEventLoopDelay({ resolution: resolutionMs });
  delay.enable();
  let responses = 0;
  let statuses: Record<string, number> = {};
  subscribe('http.server.response.finish', (message) => {
    responses++;
    const status = String((message as { response: ServerResponse }).response.statusCode);
    statuses[status] = (statuses[status] ?? 0) + 1;
  });
  const ms = (nanoseconds: number) => Number(Math.max(0, nanoseconds / 1e6 - resolutionMs).toFixed(3));
  const mb = (bytes: number) => Number((bytes / 1048576).toFixed(2));
  let since = performance.now();
  const writeLine = () => {
    const memory = process.memoryUsage();
    const line: ProbeLine = {
      at: Date.now(),
      intervalMs: Math.round(performance.now() - since),
      eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max), mean: ms(delay.mean) },
      memoryMb: {
        rss: mb(memory.rss),
        heapUsed: mb(memory.heapUsed),
        heapTotal: mb(memory.heapTotal),
        external: mb(memory.external),
        arrayBuffers: mb(memory.arrayBuffers),
      },
      responses,
      statuses,
    };
    delay.reset();
    since = performance.now();
    responses = 0;
    statuses = {};
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  };
  process.on('SIGUSR2', writeLine);
  if (intervalMs > 0) setInterval(writeLine, intervalMs).unref();
}
