// Two requests raced at a chosen point: the first stopped at a write (its table held in EXCLUSIVE
// mode from a session of the test's own: reads go on, writes and a LOCK TABLE wait), the second
// sent through a second instance on the same PostgreSQL database, then both let go. A lock both
// take makes the second wait for the first; without one, the second runs to its end or to the held
// table. SQLite's one writer runs each transaction whole: there they run one after the other.
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Service } from '../../src/service.ts';
import { loadConfig } from '../../src/config/config.ts';
import { holdTable } from './hold-table.ts';
import { backends } from './backends.ts';
import { checkedService, startService, type TestService } from './service.ts';

export type App = Service['app'];
export type Answer = LightMyRequestResponse;
type Send = (app: App) => Promise<Answer>;

/** PostgreSQL: `first` stopped at its statement `write` (a LIKE pattern) on `table`, `second` sent meanwhile; their answers. */
export async function interleaved(svc: TestService, table: string, write: string, first: Send, second: Send): Promise<[Answer, Answer]> {
  const twin = await checkedService(loadConfig({}, { dataDir: svc.ts.dataDir, logLevel: 'silent' }), { store: svc.ts.reopen(), logger: false });
  try {
    const held = await holdTable(process.env.GAVEL_TEST_DATABASE_URL!, (svc.ts.options as { schema: string }).schema, table, 'exclusive');
    try {
      const one = first(svc.app);
      await held.reached(write);
      const two = second(twin.app);
      await held.reached('%', { statements: 2, unless: two });
      await held.release();
      return [await one, await two];
    } finally { await held.release(); }
  } finally { await twin.close(); }
}

export const ORDERS = ['first then second', 'second then first'] as const;

/** SQLite: the two sent one after the other, in `order`; their answers, the first's first. */
export async function oneAfterTheOther(svc: TestService, order: typeof ORDERS[number], first: Send, second: Send): Promise<[Answer, Answer]> {
  if (order === ORDERS[0]) {
    const one = await first(svc.app);
    return [one, await second(svc.app)];
  }
  const two = await second(svc.app);
  return [await first(svc.app), two];
}

/** Sends two requests as the suite's engine races them: `interleaved` on PostgreSQL, else in one order. */
export type Race2 = (table: string, write: string, first: Send, second: Send) => Promise<[Answer, Answer]>;

/**
 * A suite per engine, titled `title (engine)`, with a test per race and order, each on a fresh
 * service: on PostgreSQL interleaved across two instances, on SQLite in both orders.
 */
export function raceSuites<R extends { title: string }>(title: string, races: readonly R[], run: (svc: TestService, race: R, race2: Race2) => Promise<void>): void {
  for (const backend of backends()) {
    describe(`${title} (${backend.name})`, () => {
      for (const race of races) {
        for (const order of backend.name === 'postgres' ? [undefined] : ORDERS) {
          test(`${race.title} (${order === undefined ? 'interleaved across two instances' : `${order}: SQLite runs them one at a time`})`, async () => {
            const svc = await startService(backend);
            try {
              await run(svc, race, (table, write, first, second) => (order === undefined
                ? interleaved(svc, table, write, first, second) : oneAfterTheOther(svc, order, first, second)));
            } finally { await svc.stop(); }
          });
        }
      }
    });
  }
}

/** A POST of `payload` as JSON. */
export const post = (app: App, url: string, payload: unknown, headers: Record<string, string>): Promise<Answer> => app.inject({ method: 'POST', url, headers, payload: JSON.stringify(payload) });

/** Two requests raced, and the check of both answers. */
export interface PairRace {
  title: string;
  /** The table the first request writes after its reads, and a LIKE pattern of that write. */
  table: string;
  write: string;
  /** Sets up the project (`P`: its console routes); the two requests, each given the instance to send it through; the check of both answers. */
  prepare(svc: TestService, P: string): Promise<{ first(app: App): Promise<Answer>; second(app: App): Promise<Answer>; check(first: Answer, second: Answer): Promise<void> }>;
}

/** raceSuites for PairRaces: each prepared, raced and checked. */
export function pairRaceSuites(title: string, races: readonly PairRace[]): void {
  raceSuites(title, races, async (svc, race, race2) => {
    const r = await race.prepare(svc, `/v1/console/projects/${svc.projectId}`);
    const [first, second] = await race2(race.table, race.write, r.first, r.second);
    await r.check(first, second);
  });
}
