import { packageVersion } from '../package-root.js';
import type * as SdkModule from './sdk.js';
import type { Tracing } from './sdk.js';

export type { Tracing };

/** The packages tracing loads, optional packages of the server, as `npm install` names them. */
export const TRACING_PACKAGES = ['@opentelemetry/api', '@opentelemetry/sdk-node', '@fastify/otel', '@opentelemetry/instrumentation-pg'];

/**
 * Starts OpenTelemetry (`tracingRequested` said so), importing its packages only now: a server
 * without the `OTEL_*` variables, the CLI and a service using the middleware never load them, and
 * need not install them.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing> {
  let module: typeof SdkModule;
  try {
    module = await import('./sdk.js');
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      TRACING_PACKAGES.some((name) => message?.includes(`'${name}'`) === true)
    ) {
      throw new Error(
        `Tracing (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER) needs the packages ${TRACING_PACKAGES.join(', ')}, ` +
          `which are not installed (npm install ${TRACING_PACKAGES.join(' ')}).`,
        { cause: error },
      );
    }
    throw error;
  }
  return module.startSdk(packageVersion(), env);
}
