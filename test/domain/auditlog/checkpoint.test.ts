import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCheckpoint, openCheckpoint, parseCheckpoint, signCheckpoint } from '../../../src/domain/auditlog/checkpoint.ts';
import {
  cosignatureMessage,
  cosignatureTimestamp,
  cosignCheckpoint,
  cosignerKeyId,
  verifyCosignatures,
} from '../../../src/domain/auditlog/cosignature.ts';
import { ed25519NoteSigner, formatVkey, parseNote, parseVkey, SIG_TYPE_COSIGNATURE_V1, SIG_TYPE_ED25519 } from '../../../src/domain/auditlog/note.ts';
import { AuditLogError } from '../../../src/domain/auditlog/errors.ts';
import { fromBase64 } from '../../../src/domain/auditlog/bytes.ts';
import { TestSigner } from './support.ts';

const ROOT = fromBase64('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=');
const code = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AuditLogError, String(e));
    return e.code;
  }
  return 'no error';
};

test('checkpoint body is the C2SP three-line format', () => {
  const body = formatCheckpoint({ origin: 'example.com/behind-the-sofa', size: 20852163, root: ROOT });
  assert.equal(body, 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n');
  const cp = parseCheckpoint(body);
  assert.equal(cp.origin, 'example.com/behind-the-sofa');
  assert.equal(cp.size, 20852163);
  assert.deepEqual(cp.root, ROOT);
  const ext = formatCheckpoint({ origin: 'o', size: 0, root: ROOT, extensions: ['ext line'] });
  assert.deepEqual(parseCheckpoint(ext).extensions, ['ext line']);
  for (const bad of ['o\n01\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n', 'o\n1\nAAAA\n', 'o\n1\n', 'o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n', 'o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'o\n99999999999999999999\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n', 'o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n']) {
    assert.equal(code(() => parseCheckpoint(bad)), 'malformed_note', JSON.stringify(bad));
  }
});

test('a checkpoint signed through the Signer port verifies against the log vkey, and only that', async () => {
  const signer = new TestSigner();
  const origin = 'gavel.example/audit';
  const pub = await signer.publicKey('checkpoint');
  const logKey = parseVkey(formatVkey(origin, SIG_TYPE_ED25519, pub));
  const note = await signCheckpoint({ origin, size: 5, root: ROOT }, ed25519NoteSigner(origin, pub, (m) => signer.sign('checkpoint', m)));
  const opened = openCheckpoint(note, [logKey]);
  assert.equal(opened.checkpoint.size, 5);
  assert.deepEqual(opened.checkpoint.root, ROOT);
  assert.equal(code(() => openCheckpoint(note.replace('\n5\n', '\n6\n'), [logKey])), 'unverified_note');
  const otherKey = parseVkey(formatVkey(origin, SIG_TYPE_ED25519, await signer.publicKey('other')));
  assert.equal(code(() => openCheckpoint(note, [otherKey])), 'unverified_note');
});

test('cosignature/v1: signed message, line layout, verification and timestamp', async () => {
  const signer = new TestSigner();
  const origin = 'gavel.example/audit';
  const logPub = await signer.publicKey('log');
  const note = await signCheckpoint({ origin, size: 20852163, root: ROOT }, ed25519NoteSigner(origin, logPub, (m) => signer.sign('log', m)));
  const text = parseNote(note).text;
  assert.equal(
    new TextDecoder().decode(cosignatureMessage(text, 1679315147)),
    'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'.replace('example.com/behind-the-sofa', origin),
  );
  const wName = 'witness.example/w1';
  const wPub = await signer.publicKey('witness');
  const line = await cosignCheckpoint(text, { name: wName, publicKey: wPub, sign: (m) => signer.sign('witness', m) }, 1700000000);
  assert.match(line, /^\u2014 witness\.example\/w1 [A-Za-z0-9+/]+=*\n$/);
  const blob = Buffer.from(line.trim().split(' ')[2] as string, 'base64');
  assert.equal(blob.length, 4 + 8 + 64);
  assert.deepEqual(new Uint8Array(blob.subarray(0, 4)), cosignerKeyId(wName, wPub));
  assert.equal(blob.readBigUInt64BE(4), 1700000000n);

  const wKey = parseVkey(formatVkey(wName, SIG_TYPE_COSIGNATURE_V1, wPub));
  const cosigned = note + line;
  const got = verifyCosignatures(cosigned, [wKey]);
  assert.equal(got.length, 1);
  assert.equal(got[0]?.timestamp, 1700000000);
  // The log's signature still opens the cosigned note; the witness line is ignored there.
  assert.equal(openCheckpoint(cosigned, [parseVkey(formatVkey(origin, SIG_TYPE_ED25519, logPub))]).checkpoint.size, 20852163);
  // A type 0x01 key for the same witness key is a different key ID: not a cosigner.
  assert.equal(verifyCosignatures(cosigned, [parseVkey(formatVkey(wName, SIG_TYPE_ED25519, wPub))]).length, 0);
  // The cosignature covers the checkpoint and the timestamp: a known witness's line that fails
  // rejects the note (C2SP signed-note), as a known log signature does.
  assert.throws(() => verifyCosignatures(cosigned.replace('\n20852163\n', '\n20852164\n'), [wKey]), /cosignature by witness witness\.example\/w1 does not verify/);
  const tsTampered = Buffer.from(blob);
  tsTampered.writeBigUInt64BE(1700000001n, 4);
  assert.throws(() => verifyCosignatures(`${note}\u2014 ${wName} ${tsTampered.toString('base64')}\n`, [wKey]), /does not verify/);
  // Nor does a valid line of the same witness beside it excuse it.
  assert.throws(() => verifyCosignatures(`${cosigned}\u2014 ${wName} ${tsTampered.toString('base64')}\n`, [wKey]), /does not verify/);
});

test('cosignature timestamp known answer (transparency-dev/formats)', () => {
  const sig = parseNote('x\n\n\u2014 w ZGhGuQAAAABm/qTPeyKXD+R2rzyQsxPiP8mXum7qq/iF0u4vanlqJyocWODBt97w9uL+8qT7S5gxEHWWOworDcFiEBYJXORmnFBOBA==\n').signatures[0];
  assert.ok(sig);
  assert.equal(cosignatureTimestamp(sig), 1727964367);
  const plain = parseNote('x\n\n\u2014 w eQjRQm6eSKzFoiYalgwCPXu2y3ijtg68is9M46JKxuZB+dRfTmeQeDBoXnvxZx2ugnkyV+MUMLXpWs1hPb/W/4xkNQY=\n').signatures[0];
  assert.ok(plain);
  assert.equal(cosignatureTimestamp(plain), undefined, 'a plain Ed25519 note signature has no timestamp');
});
