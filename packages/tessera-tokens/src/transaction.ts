/**
 * A store whose table stores can be bound to one transaction (`Store.transaction`, `src/store/`):
 * `work` gets them as `Tables`, each statement of theirs runs in that transaction, committed when
 * `work` resolves and rolled back when it throws. A service composes there what one change is: the
 * lock it takes, the rule it checks (a limit, a once value), the write and its audit events. It
 * says "nothing is done" by throwing its own error, which rolls back whatever was written before.
 *
 * Each service names the tables it uses (`CredentialTables`, …); the store gives them all. Inside
 * `work`, only the tables it is given may be used: a statement through the store itself would run
 * outside the transaction (on SQLite it would wait for the transaction's end, which waits for it).
 */
export interface Transactional<Tables> {
  transaction<T>(work: (tx: Tables) => Promise<T>): Promise<T>;
}

/**
 * A write refused because a key it would store is taken (an AppID, a ClientID, an email): the one
 * form the store gives a driver's unique violation (`src/store/sql/errors.ts`), whatever the table.
 * Nothing of the transaction it was thrown in is written.
 */
export class StoreConflictError extends Error {
  constructor() {
    super('a key this write would store is taken');
    this.name = 'StoreConflictError';
  }
}
