/** The one client the oidc-provider peer knows; shared by its server and the benchmark. */
export const OIDC_CLIENT = { clientId: 'bench-client', clientSecret: 'bench-client-secret-bench-client-secret-0123' };
