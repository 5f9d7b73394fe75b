// The `kii-cloud-sdk` package ships no types; these cover what the compatibility tests use.
declare module 'kii-cloud-sdk' {
  export interface KiiAppAdminContext {
    getAccessToken(): string;
    _getId(): string;
  }
  export interface KiiObject {
    get(key: string): unknown;
  }
  /** A query, handed back to the SDK: the tests use none of its members. */
  export type KiiQuery = object;
  export interface KiiBucket {
    executeQuery(query: KiiQuery | null): Promise<[KiiQuery, KiiObject[], KiiQuery | null]>;
  }
  export interface KiiStatic {
    initializeWithSite(appId: string, appKey: string, site: string): void;
    authenticateAsAppAdmin(clientId: string, clientSecret: string): Promise<KiiAppAdminContext>;
    authenticateAsThing(vendorThingId: string, password: string): Promise<unknown>;
    bucketWithName(name: string): KiiBucket;
  }
  export interface KiiUserStatic {
    authenticate(username: string, password: string): Promise<unknown>;
  }
  export interface KiiThingStatic {
    register(fields: Record<string, unknown>): Promise<unknown>;
  }
  export interface KiiQueryStatic {
    queryWithClause(clause: null): KiiQuery;
  }
  const kiiSdk: { create(): { Kii: KiiStatic; KiiUser: KiiUserStatic; KiiThing: KiiThingStatic; KiiQuery: KiiQueryStatic } };
  export default kiiSdk;
}
