// README.md's configuration table is the settings' documentation: every variable config.ts reads is
// there and nothing else, with the default the code applies and the whole-number range it accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { MAIN } from '../support/process.ts';
import { ConfigError, DEFAULTS, loadConfig, SPECS, type Config } from '../../src/config/config.ts';

const rows = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').split('\n')
  .filter((l) => l.startsWith('| `GAVEL_'))
  .map((l) => { const [variable, byDefault, accepted] = l.slice(2, -2).split(' | ') as [string, string, string]; return { env: variable.slice(1, -1), byDefault, accepted }; });
const settings = Object.entries(SPECS) as [keyof Config, (typeof SPECS)[keyof Config]][];
const refused = (env: Record<string, string>) => assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.key === Object.keys(env)[0], JSON.stringify(env));

test('the table lists every variable once, and the file takes each under its name without GAVEL_, in lower case', () => {
  assert.deepEqual(rows.map((r) => r.env).sort(), settings.map(([, s]) => s.env).sort());
  for (const [, spec] of settings) assert.equal(spec.file, spec.env.replace(/^GAVEL_/, '').toLowerCase(), spec.env);
});

test('each default is the one the table gives', () => {
  for (const { env, byDefault } of rows) {
    const [key] = settings.find(([, s]) => s.env === env)!;
    const shown = /^`([^`]*)`$/.exec(byDefault)?.[1];
    assert.equal(DEFAULTS[key] === undefined ? undefined : String(DEFAULTS[key]), shown, `${env} defaults to ${byDefault}`);
  }
});

test('each whole-number range is the one the table gives, held at both edges, from the environment and from the file', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'gavel-cfg-')), 'gavel.json');
  let ranges = 0;
  for (const { env, accepted } of rows) {
    const range = /^`(\d+)`–`(\d+)`$/.exec(accepted);
    const [key, spec] = settings.find(([, s]) => s.env === env)!;
    if (!range) continue;
    ranges++;
    const [min, max] = [Number(range[1]), Number(range[2])];
    assert.equal(loadConfig({ [env]: String(min) })[key], min, env);
    assert.equal(loadConfig({ [env]: String(max) })[key], max, env);
    if (min > 0) refused({ [env]: String(min - 1) });
    refused({ [env]: String(max + 1) });
    writeFileSync(file, JSON.stringify({ [spec.file]: max }));
    assert.equal(loadConfig({ GAVEL_CONFIG: file })[key], max, spec.file);
    writeFileSync(file, JSON.stringify({ [spec.file]: max + 1 }));
    assert.throws(() => loadConfig({ GAVEL_CONFIG: file }), (e: unknown) => e instanceof ConfigError && e.key === `${file}: ${spec.file}`, spec.file);
  }
  assert.equal(ranges, settings.filter(([k]) => typeof DEFAULTS[k] === 'number').length, 'every number has its range in the table');
});

test('the log levels are the ones the table lists', () => {
  const levels = [...rows.find((r) => r.env === 'GAVEL_LOG_LEVEL')!.accepted.matchAll(/`(\w+)`/g)].map((m) => m[1]!);
  for (const level of levels) assert.equal(loadConfig({ GAVEL_LOG_LEVEL: level }).logLevel, level);
  assert.ok(levels.includes('silent'));
  refused({ GAVEL_LOG_LEVEL: 'INFO' });
});

test('`gavel help` names the same variables', () => {
  const help = spawnSync(process.execPath, [MAIN, 'help'], { encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  const named = [...help.stdout.slice(help.stdout.indexOf('configuration:')).matchAll(/GAVEL_[A-Z_]+/g)].map((m) => m[0]).filter((v) => v !== 'GAVEL_CONFIG');
  assert.deepEqual(named.sort(), settings.map(([, s]) => s.env).sort());
});
