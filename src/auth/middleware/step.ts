import { isTesseraError, type TesseraError } from '../../errors.js';
import type { Principal } from '../../principal.js';
import type { AuthenticationRequest } from '../authenticate.js';
import type { RequestAuthenticator } from '../authenticate.js';

/** What a middleware does with the outcome of authenticating one request. */
export interface AuthenticationOutcome {
  /** The request may go on, as `principal`. */
  accept(principal: Principal): void;
  /** The contract's error: answer it. */
  refuse(error: TesseraError): void;
  /** Anything else (a bug, a SQLite error): hand it to the framework's error handler. */
  fail(error: unknown): void;
}

/**
 * The step the Fastify and the Express middleware share, built once per middleware: reads a
 * framework's request with `describe` (which may refuse it, e.g. for a repeated `Authorization`
 * header), authenticates it and hands the outcome on, synchronously when the principal was in memory.
 */
export function authenticationStep<Request>(
  authenticator: RequestAuthenticator,
  describe: (request: Request) => AuthenticationRequest,
): (request: Request, outcome: AuthenticationOutcome) => void {
  return (request, outcome) => {
    try {
      const principal = authenticator.authenticate(describe(request));
      if (principal instanceof Promise) principal.then((resolved) => outcome.accept(resolved), (error: unknown) => refuse(outcome, error));
      else outcome.accept(principal);
    } catch (error) {
      refuse(outcome, error);
    }
  };
}

function refuse(outcome: AuthenticationOutcome, error: unknown): void {
  if (isTesseraError(error)) outcome.refuse(error);
  else outcome.fail(error);
}
