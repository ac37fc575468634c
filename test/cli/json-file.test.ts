// What the offline checkers refuse to read: a file whose bytes are not UTF-8 JSON, one far too large
// to be a proof, and numbers that read as another value than the one written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DamagedFile, MAX_FILE_BYTES, readJsonFile } from '../../src/cli/json-file.ts';

test('the checkers read only exact UTF-8 JSON of a plausible size', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-jf-'));
  const file = (name: string, content: string | Buffer) => { const f = join(dir, name); writeFileSync(f, content); return f; };
  try {
    assert.deepEqual(readJsonFile(file('ok.json', '{"a": 1, "b": 1.5, "c": -0.25, "d": 1e21, "e": -0, "f": 9007199254740991}'), 'f').value,
      { a: 1, b: 1.5, c: -0.25, d: 1e21, e: -0, f: 9007199254740991 });
    assert.deepEqual(readJsonFile(file('same.json', '{"a": 1.0, "b": 1e0, "c": 100E-2, "d": 0.5}'), 'f').value, { a: 1, b: 1, c: 1, d: 0.5 });
    const refused = (name: string, content: string | Buffer, why: RegExp) =>
      assert.throws(() => readJsonFile(file(name, content), 'proof file'), (e: unknown) => e instanceof DamagedFile && why.test(e.message), name);
    refused('rounded.json', '{"minor": 0.99999999999999999999}', /0\.99999999999999999999 reads as 1/);
    refused('fraction.json', '{"x": 0.30000000000000000001}', /reads as 0\.3/);
    refused('big.json', '{"x": 9007199254740993}', /reads as 9007199254740992/);
    refused('latin1.json', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]), /not UTF-8/);
    refused('bom.json', '\ufeff{}', /byte order mark/);
    const huge = join(dir, 'huge.json');
    writeFileSync(huge, '{}');
    truncateSync(huge, MAX_FILE_BYTES + 1);
    assert.throws(() => readJsonFile(huge, 'proof file'), (e: unknown) => e instanceof DamagedFile && /larger than/.test(e.message));
    // A file it cannot read is a usage error, said in words an auditor reads, with the code after.
    assert.throws(() => readJsonFile(join(dir, 'absent.json'), 'proof file'), (e: unknown) => !(e instanceof DamagedFile) && (e as Error).message === `cannot read the proof file ${join(dir, 'absent.json')}: no such file (ENOENT)`);
    assert.throws(() => readJsonFile(dir, 'proof file'), (e: unknown) => !(e instanceof DamagedFile) && (e as Error).message === `cannot read the proof file ${dir}: it is a directory (EISDIR)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
