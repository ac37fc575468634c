// The serving lock in one process, on real files: taken in a directory not yet made, refused while
// held, and free again once released, even after a refused attempt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirInUse, takeServingLock } from '../../src/store/sqlite/serving-lock.ts';

test('the serving lock makes its directory, refuses a second holder, and a refused attempt keeps nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gavel-lock-'));
  try {
    const file = join(dir, 'not-yet', 'gavel.db');
    const first = takeServingLock(file);
    assert.throws(() => takeServingLock(file), DataDirInUse);
    first.release();
    const again = takeServingLock(file);
    again.release();
    again.release();
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
