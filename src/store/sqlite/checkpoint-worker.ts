/**
 * The SQLite checkpointer's thread (`checkpointer.ts`): its own connection to the file, which copies
 * the write-ahead log into the database when told to (the serving connection writes nothing
 * meanwhile), and answers with what it copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabaseToRead } from 'tessera-tokens/internal/store/sqlite/connection.js';

export interface CheckpointWorkerData {
  path: string;
}

/** A request ('checkpoint' or 'stop'), and the answer to 'checkpoint'. */
export type CheckpointRequest = 'checkpoint' | 'stop';
export type CheckpointAnswer = { copied: number; log: number } | { failed: string };

const { path } = workerData as CheckpointWorkerData;
const db = openDatabaseToRead(path);
// This connection writes nothing: its own automatic checkpoint would never run anyway.
db.exec('PRAGMA wal_autocheckpoint = 0');

parentPort?.on('message', (request: CheckpointRequest) => {
  if (request === 'stop') {
    db.close();
    parentPort?.close();
    return;
  }
  let answer: CheckpointAnswer;
  try {
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    answer = { copied: result?.checkpointed ?? 0, log: result?.log ?? 0 };
  } catch (error) {
    answer = { failed: (error as Error).message };
  }
  parentPort?.postMessage(answer);
});
