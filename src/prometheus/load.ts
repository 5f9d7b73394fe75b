import { currentBuild } from 'tessera-tokens/internal/release.js';
import type * as MetricsModule from './metrics.js';
import type { PrometheusMetrics } from './metrics.js';

/**
 * The Prometheus metrics, with prom-client imported only now: a server without METRICS_PORT, the
 * CLI and a service using the middleware never load it, and need not install it.
 */
export async function loadPrometheusMetrics(): Promise<PrometheusMetrics> {
  let module: typeof MetricsModule;
  try {
    module = await import('./metrics.js');
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code === 'ERR_MODULE_NOT_FOUND' && message?.includes("'prom-client'") === true) {
      throw new Error('METRICS_PORT needs the package prom-client, which is not installed (npm install prom-client).', { cause: error });
    }
    throw error;
  }
  return new module.PrometheusMetrics(currentBuild());
}
