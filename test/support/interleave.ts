// Two requests raced at a chosen point: the first stopped at a write (its table held in EXCLUSIVE
// mode from a session of the test's own: reads go on, writes and a LOCK TABLE wait), the second
// sent through a second instance on the same PostgreSQL database, then both let go. A lock both
// take makes the second wait for the first; without one, the second runs to its end or to the held
// table. SQLite's one writer runs each transaction whole: there they run one after the other, and,
// for a race that asks, the second also runs whole between the first's authentication and its
// handler (what a request authorized on roles read before its transaction meets on SQLite).
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

export const ORDERS = ['first then second', 'second then first', 'second between the first\'s authentication and its handler'] as const;
type Order = typeof ORDERS[number];

/**
 * A preHandler hook, installed before the app is ready, that holds the next request to reach it
 * once armed: it has been authenticated (preValidation) and its handler has not begun.
 */
export function handlerGate(app: App): { arm(): { reached: Promise<boolean>; release(): void } } {
  let armed: { reach(): void; released: Promise<void> } | undefined;
  app.addHook('preHandler', async () => {
    const gate = armed;
    if (gate === undefined) return;
    armed = undefined;
    gate.reach();
    await gate.released;
  });
  return {
    /** `reached` resolves true once a request is held there, or false on release() before any was. */
    arm() {
      const reached = Promise.withResolvers<boolean>();
      const released = Promise.withResolvers<void>();
      armed = { reach: () => reached.resolve(true), released: released.promise };
      return { reached: reached.promise, release: () => { armed = undefined; reached.resolve(false); released.resolve(); } };
    },
  };
}

/** SQLite: the two sent as `order` says (`gate`: the app's handlerGate); their answers, the first's first. */
export async function oneAfterTheOther(svc: TestService, order: Order, first: Send, second: Send, gate?: ReturnType<typeof handlerGate>): Promise<[Answer, Answer]> {
  if (order === ORDERS[0]) {
    const one = await first(svc.app);
    return [one, await second(svc.app)];
  }
  if (order === ORDERS[1]) {
    const two = await second(svc.app);
    return [await first(svc.app), two];
  }
  if (gate === undefined) throw new Error(`${order} needs the app's handlerGate`);
  const held = gate.arm();
  try {
    const one = first(svc.app);
    // A first refused before its handler never reaches the gate: the second then runs after it.
    if (!(await Promise.race([held.reached, one.then(() => false)]))) return [await one, await second(svc.app)];
    const two = await second(svc.app);
    held.release();
    return [await one, two];
  } finally { held.release(); }
}

/** Sends two requests as the suite's engine races them: `interleaved` on PostgreSQL, else in one order. */
export type Race2 = (table: string, write: string, first: Send, second: Send) => Promise<[Answer, Answer]>;

/** What raceSuites needs of a race: its title and, optionally, `betweenAuthentication` (below). */
export interface RaceTitle {
  title: string;
  /**
   * The first request is authenticated (its roles read) before its transaction: on SQLite the
   * second is also run whole between the two, the first held in a handlerGate meanwhile.
   */
  betweenAuthentication?: boolean;
}

/**
 * A suite per engine, titled `title (engine)`, with a test per race and order, each on a fresh
 * service: on PostgreSQL interleaved across two instances, on SQLite in both orders (and, for a
 * race that asks, the second between the first's authentication and its handler).
 */
export function raceSuites<R extends RaceTitle>(title: string, races: readonly R[], run: (svc: TestService, race: R, race2: Race2) => Promise<void>): void {
  for (const backend of backends()) {
    describe(`${title} (${backend.name})`, () => {
      for (const race of races) {
        const orders = backend.name === 'postgres' ? [undefined] : ORDERS.filter((o) => o !== ORDERS[2] || race.betweenAuthentication);
        for (const order of orders) {
          test(`${race.title} (${order === undefined ? 'interleaved across two instances' : `${order}: SQLite runs them one at a time`})`, async () => {
            const svc = await startService(backend);
            try {
              // Before the app is ready (the first request readies it).
              const gate = order === ORDERS[2] ? handlerGate(svc.app) : undefined;
              await run(svc, race, (table, write, first, second) => (order === undefined
                ? interleaved(svc, table, write, first, second) : oneAfterTheOther(svc, order, first, second, gate)));
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
export interface PairRace extends RaceTitle {
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
