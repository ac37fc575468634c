import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, sign } from 'node:crypto';
import {
  checkKeyName,
  ed25519NoteSigner,
  formatVkey,
  keyId,
  openNote,
  parseNote,
  parseVkey,
  signNote,
  SIG_TYPE_COSIGNATURE_V1,
  SIG_TYPE_ED25519,
} from '../../../src/domain/auditlog/note.ts';
import { AuditLogError } from '../../../src/domain/auditlog/errors.ts';
import { keyFromSeed, rawPublicKey, TestSigner } from './support.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

// golang.org/x/mod/sumdb/note reference vector (Ed25519 is deterministic, so signing must
// reproduce the published note byte for byte).
const PETER_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const PETER_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const PETER_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_NOTE = `${PETER_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

const code = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof AuditLogError, String(e));
    return e.code;
  }
  return 'no error';
};

test('vkey known answers: key IDs of types 0x01 and 0x04 match published vkeys', () => {
  const peter = parseVkey(PETER_VKEY);
  assert.equal(peter.name, 'PeterNeumann');
  assert.equal(peter.type, SIG_TYPE_ED25519);
  assert.equal(hex(peter.keyId), 'c74f20a3');
  assert.equal(formatVkey(peter.name, peter.type, peter.publicKey), PETER_VKEY);
  // transparency-dev/formats note tests: base64 containing '+', and a cosignature/v1 key.
  const plus = parseVkey('TEST+7997405c+AQcC+FTVKf0jlTdHDY3rbevmnKxxPjigCXlVtGe6RIr6');
  assert.equal(hex(plus.keyId), '7997405c');
  const cosig = parseVkey('remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2');
  assert.equal(cosig.type, SIG_TYPE_COSIGNATURE_V1);
  assert.equal(hex(keyId(cosig.name, SIG_TYPE_COSIGNATURE_V1, cosig.publicKey)), 'da77ade7');
});

test('vkey rejects wrong key IDs, unknown types and malformed strings', () => {
  assert.equal(code(() => parseVkey('PeterNeumann+00000000+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')), 'malformed_note');
  assert.equal(code(() => parseVkey('rekor.sigstore.dev+12345678+AwEB')), 'malformed_note');
  assert.equal(code(() => parseVkey('bananas+12344556')), 'malformed_note');
  assert.equal(code(() => parseVkey('x+12345678+THIS_IS_NOT_BASE64!')), 'malformed_note');
  assert.equal(code(() => parseVkey(42 as unknown as string)), 'malformed_note');
  // Every truncation of a valid vkey is rejected.
  for (let i = 1; i < PETER_VKEY.length; i++) assert.equal(code(() => parseVkey(PETER_VKEY.slice(0, i))), 'malformed_note');
});

test('signing the Go reference note reproduces it byte for byte, and it opens', async () => {
  const seed = Buffer.from(PETER_SKEY.split('+').slice(4).join('+'), 'base64').subarray(1);
  const priv = keyFromSeed(seed);
  const pub = rawPublicKey(createPublicKey(priv));
  assert.equal(formatVkey('PeterNeumann', SIG_TYPE_ED25519, pub), PETER_VKEY);
  const signer = ed25519NoteSigner('PeterNeumann', pub, async (m) => new Uint8Array(sign(null, m, priv)));
  assert.equal(await signNote(PETER_TEXT, [signer]), PETER_NOTE);
  const opened = openNote(PETER_NOTE, [parseVkey(PETER_VKEY)]);
  assert.equal(opened.note.text, PETER_TEXT);
  assert.equal(code(() => openNote(PETER_NOTE.replace('cryptography', 'cryptographY'), [parseVkey(PETER_VKEY)])), 'unverified_note');
});

test('unknown signers are ignored; a failing known signature rejects the note; none known rejects', async () => {
  const s = new TestSigner();
  const a = ed25519NoteSigner('a.example/log', await s.publicKey('a'), (m) => s.sign('a', m));
  const b = ed25519NoteSigner('b.example/log', await s.publicKey('b'), (m) => s.sign('b', m));
  const aKey = parseVkey(formatVkey('a.example/log', SIG_TYPE_ED25519, await s.publicKey('a')));
  const bKey = parseVkey(formatVkey('b.example/log', SIG_TYPE_ED25519, await s.publicKey('b')));
  const note = await signNote('hello\n\nworld\n', [b, a]);
  assert.equal(parseNote(note).text, 'hello\n\nworld\n', 'the text may contain blank lines; the last one separates');
  assert.deepEqual(openNote(note, [aKey]).verifiedBy, [aKey]);
  assert.equal(openNote(note, [aKey, bKey]).verifiedBy.length, 2);
  assert.equal(code(() => openNote(note, [])), 'unverified_note');
  // Same name, other key: ignored (its key ID differs), so no known signature.
  const other = parseVkey(formatVkey('a.example/log', SIG_TYPE_ED25519, await s.publicKey('c')));
  assert.equal(code(() => openNote(note, [other])), 'unverified_note');
  // A's line re-attached under B's text: known key, bad signature.
  const aLine = note.split('\n').find((l) => l.includes('a.example/log')) as string;
  assert.equal(code(() => openNote(`other\n\n${aLine}\n`, [aKey])), 'unverified_note');
});

test('hostile notes are typed errors', () => {
  for (const bad of ['', 'no signatures\n', 'text\n\n', 'text\n\n\u2014 name\n', 'text\n\n- name AAAAAAA=\n', 'text\n\n\u2014 name AAAA\n', 'te\u0000xt\n\n\u2014 n AAAAAAA=\n', 'text\n\n\u2014 n AAAAAAA=', `t\n\n${'\u2014 n AAAAAAA=\n'.repeat(65)}`]) {
    assert.equal(code(() => parseNote(bad)), 'malformed_note', JSON.stringify(bad));
  }
  assert.equal(code(() => parseNote(null as unknown as string)), 'malformed_note');
});

test('key names refuse exactly the Unicode spaces (White_Space, as signed-note and Go\'s unicode.IsSpace say) and plus', () => {
  // U+0085 (NEXT LINE) is a Unicode space that JavaScript's \s leaves out; U+FEFF is no space, though \s counts it.
  for (const bad of ['a b', 'a\u0085b', 'a\u00a0b', 'a\u2028b', 'a\u3000b', 'a+b', '']) {
    assert.throws(() => checkKeyName(bad), AuditLogError, JSON.stringify(bad));
  }
  for (const good of ['example.com/log', 'a\ufeffb', 'ünïcödé/ключ']) assert.doesNotThrow(() => checkKeyName(good), JSON.stringify(good));
});

test('a vkey of a type other than Ed25519 (0x01) or cosignature/v1 (0x04) is refused, though its key ID matches', () => {
  const publicKey = new Uint8Array(32).fill(7);
  for (const type of [0x02, 0x03, 0x05, 0xff]) {
    const vkey = `example.com/key+${Buffer.from(keyId('example.com/key', type, publicKey)).toString('hex')}+${Buffer.from([type, ...publicKey]).toString('base64')}`;
    assert.throws(() => parseVkey(vkey), (e: Error) => e instanceof AuditLogError && /not an Ed25519 \(0x01\) or cosignature\/v1 \(0x04\) key/.test(e.message), `type ${type}`);
  }
  const ok = `example.com/key+${Buffer.from(keyId('example.com/key', SIG_TYPE_ED25519, publicKey)).toString('hex')}+${Buffer.from([SIG_TYPE_ED25519, ...publicKey]).toString('base64')}`;
  assert.equal(parseVkey(ok).type, SIG_TYPE_ED25519);
});
