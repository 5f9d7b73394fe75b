// The `kii-cloud-sdk` package ships no types; these cover what the compatibility tests use.
declare module 'kii-cloud-sdk' {
  export interface KiiAppAdminContext {
    getAccessToken(): string;
    _getId(): string;
  }
  export interface KiiStatic {
    initializeWithSite(appId: string, appKey: string, site: string): void;
    authenticateAsAppAdmin(clientId: string, clientSecret: string): Promise<KiiAppAdminContext>;
  }
  const kiiSdk: { create(): { Kii: KiiStatic } };
  export default kiiSdk;
}
