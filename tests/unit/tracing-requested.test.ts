import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tracingRequested } from '../../src/tracing/requested.js';

describe('tracingRequested: the standard OTEL_* variables alone turn tracing on', () => {
  it('off with none of them, or with only settings that export nothing', () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(
      tracingRequested({ OTEL_SERVICE_NAME: 'tessera', OTEL_TRACES_SAMPLER: 'always_on', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }),
      false,
    );
  });

  it('on with an OTLP endpoint, for every signal or for traces', () => {
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
  });

  it('on with an exporter named, off with `none`', () => {
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' }), true);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), false);
    // As the SDK reads it: `none` beside another exporter is ignored.
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'none,otlp' }), true);
  });

  it('off whatever else is set when OTEL_SDK_DISABLED is true', () => {
    assert.equal(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), false);
    assert.equal(tracingRequested({ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
  });
});
