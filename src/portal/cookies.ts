import type { CookieSerializeOptions } from '@fastify/cookie';

/**
 * The portal's cookies: the session (its token), the form-token secret of
 * `@fastify/csrf-protection`, and the device token that makes a browser that signed in a trusted
 * device of its account (src/developers/trusted-device.ts). All HttpOnly. Over HTTPS (`secure`) they are `Secure` and carry the
 * `__Host-` prefix, which a browser accepts only from this host, with `Path=/` and no `Domain`: a
 * page of another subdomain cannot plant one. Over plain HTTP (a laptop, `http://127.0.0.1:8080`)
 * a browser would drop `Secure` cookies, so they are neither.
 */
export interface PortalCookies {
  session: { name: string; options: CookieSerializeOptions };
  csrf: { name: string; options: CookieSerializeOptions };
  device: { name: string; options: CookieSerializeOptions };
}

/** How long a browser stays a trusted device of an account after its last sign-in there. */
const DEVICE_MAX_AGE_SECONDS = 180 * 24 * 3600;

export function portalCookies(secure: boolean): PortalCookies {
  const prefix = secure ? '__Host-' : '';
  const path = secure ? '/' : '/portal';
  return {
    // Lax: a link to the portal from elsewhere (an invitation pasted into a chat) arrives signed in;
    // a form posted from elsewhere is stopped by the form token and by the CSRF cookie's Strict.
    session: { name: `${prefix}tessera-session`, options: { httpOnly: true, secure, sameSite: 'lax', path } },
    csrf: { name: `${prefix}tessera-csrf`, options: { httpOnly: true, secure, sameSite: 'strict', path } },
    // Read only by the sign-in form's POST, and kept after sign-out: that is its use.
    device: {
      name: `${prefix}tessera-device`,
      options: { httpOnly: true, secure, sameSite: 'strict', path, maxAge: DEVICE_MAX_AGE_SECONDS },
    },
  };
}
