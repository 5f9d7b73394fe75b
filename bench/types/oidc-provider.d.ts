// node-oidc-provider ships no types; these are the parts of it that the benchmark's peer uses.
declare module 'oidc-provider' {
  import type { RequestListener } from 'node:http';

  export default class Provider {
    constructor(issuer: string, configuration: object);
    callback(): RequestListener;
  }
}
