import type { AuthenticationRequest, RequestAuthenticator } from '../../auth/authenticate.js';
import { isTesseraError, type TesseraError } from '../../errors.js';
import type { Principal } from '../../principal.js';

/** How one framework's middleware reads a request and answers it (`Next` is the framework's own). */
export interface MiddlewareGlue<Request, Reply, Next> {
  /** The request as the authenticator takes it; may throw the contract's error (a repeated `Authorization` header). */
  describe(request: Request): AuthenticationRequest;
  /** Puts the principal on the request and lets it go on. */
  accept(request: Request, principal: Principal, next: Next): void;
  /** Answers the contract's error. */
  refuse(reply: Reply, error: TesseraError): void;
  /** Hands anything else (a bug, a SQLite error) to the framework's error handler. */
  fail(next: Next, error: unknown): void;
}

/**
 * The step the Fastify and the Express middleware share: authenticates a request and hands the
 * outcome to the framework's glue, synchronously when the principal was in memory. The glue takes
 * the request, reply and `next` as arguments, so that a request answered from memory allocates no
 * closure.
 */
export function authenticationStep<Request, Reply, Next>(
  authenticator: RequestAuthenticator,
  glue: MiddlewareGlue<Request, Reply, Next>,
): (request: Request, reply: Reply, next: Next) => void {
  return (request, reply, next) => {
    try {
      const principal = authenticator.authenticate(glue.describe(request));
      if (principal instanceof Promise) {
        principal.then(
          (resolved) => glue.accept(request, resolved, next),
          (error: unknown) => refuse(glue, reply, next, error),
        );
      } else {
        glue.accept(request, principal, next);
      }
    } catch (error) {
      refuse(glue, reply, next, error);
    }
  };
}

function refuse<Request, Reply, Next>(glue: MiddlewareGlue<Request, Reply, Next>, reply: Reply, next: Next, error: unknown): void {
  if (isTesseraError(error)) glue.refuse(reply, error);
  else glue.fail(next, error);
}
