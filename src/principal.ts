/** Who a request is made by, once authenticated. */
export type PrincipalKind = 'anonymous' | 'admin';

export interface Principal {
  appId: string;
  kind: PrincipalKind;
  /** The admin id of the app for an admin token; `ANONYMOUS` otherwise. */
  id: string;
  /** `basic`: no token, `Authorization: Basic base64(AppID:anything)`; `bearer`: a token. */
  auth: 'basic' | 'bearer';
  /** When the bearer token stops working (UNIX ms), or null if it never does / there is none. */
  expiresAt: number | null;
}

export const ANONYMOUS_ID = 'ANONYMOUS';
