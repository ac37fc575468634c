import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isDid, isResourceUri, parseResourcePattern, parseTimestamp } from '../../../src/domain/policy/index.ts';
import { isRequestResource } from '../../../src/domain/policy/formats.ts';

test('DIDs follow the W3C syntax, with or without percent escapes', () => {
  for (const ok of ['did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', 'did:web:example.com%3A8443', 'did:web:example.com:user:alice']) assert.equal(isDid(ok), true, ok);
  for (const bad of ['did:key:', 'did:Key:z', 'did:web:example.com:', 'did:web:a%3', 'key:z6Mk', 'did:web:a b', 42]) assert.equal(isDid(bad), false, String(bad));
});

test('a DID has one spelling: a percent escape in uppercase hex, and none for a character an idchar holds as is', () => {
  for (const ok of ['did:web:example.com%3A8443', 'did:x:%40%2F%7E%C3%A9', 'did:x:%00%7F%FF', 'did:x:%2C%5B%5E%60%7B']) assert.equal(isDid(ok), true, ok);
  // Lowercase hex, or an escaped letter, digit, ".", "-" or "_": a second spelling of some other DID.
  for (const bad of ['did:web:example.com%3a8443', 'did:x:%c3%a9', 'did:web:ex%61mple.com', 'did:web:%41', 'did:x:%5A', 'did:x:%7A', 'did:x:%30', 'did:x:%39',
    'did:x:a%2Eb', 'did:x:a%2Db', 'did:x:a%5Fb']) assert.equal(isDid(bad), false, bad);
  // Every escape against the rule, spelt out: refused exactly when it is lowercase or decodes to an idchar.
  for (let byte = 0; byte < 256; byte++) {
    const hex = byte.toString(16).toUpperCase().padStart(2, '0');
    const literal = /^[A-Za-z0-9._-]$/.test(String.fromCharCode(byte));
    assert.equal(isDid(`did:x:a%${hex}`), !literal, hex);
    if (/[A-F]/.test(hex)) assert.equal(isDid(`did:x:a%${hex.toLowerCase()}`), false, hex.toLowerCase());
  }
});

test('resource URIs refuse dot segments, empty segments and stars', () => {
  for (const ok of ['resource://a', 'resource://a/b.c/..d', 'resource://shop/%41', 'resource://x:y@z']) assert.equal(isResourceUri(ok), true, ok);
  for (const bad of ['resource://', 'resource://a/', 'resource://a//b', 'resource://a/./b', 'resource://a/%2E%2e', 'resource://a/%zz', 'resource://a*', 'https://a', 'resource://a b']) assert.equal(isResourceUri(bad), false, bad);
  assert.deepEqual(parseResourcePattern('resource://docs/*'), { kind: 'prefix', prefix: 'resource://docs/' });
  assert.deepEqual(parseResourcePattern('resource://docs'), { kind: 'exact', uri: 'resource://docs' });
  assert.equal(parseResourcePattern('resource://*/docs'), null);
});

test('a requested resource also holds no escape a decoder turns into structure; policy literals keep the resource grammar', () => {
  for (const ok of ['resource://a', 'resource://a/%20b', 'resource://docs/%C3%A4', 'resource://a/..x', 'resource://a/B:c@d', 'resource://a/%2A%5B%5D%22%3C%3E%5E%60%7B%7C%7D', 'resource://caf%C3%A9/x', 'resource://a%5B1%5D/x']) assert.equal(isRequestResource(ok), true, ok);
  for (const bad of ['resource://a/..%2Fb', 'resource://a/%2f', 'resource://a/%5c', 'resource://a/%5C', 'resource://a/%25', 'resource://a/%00', 'resource://a/%0A', 'resource://a/%1F', 'resource://a/%7F', 'resource://a/../b',
    // A dot segment with parameters (Tomcat, Spring), and escapes that are not UTF-8 (an overlong "/", a lone continuation byte).
    'resource://pay/eu/..;/us', 'resource://pay/eu/.;x', 'resource://pay/%2e%2e;x/us', 'resource://pay/eu/..%C0%AFus', 'resource://a/%80', 'resource://a/%E0%80%AF', 'resource://a/%C3']) {
    assert.equal(isRequestResource(bad), false, bad);
  }
  assert.equal(isResourceUri('resource://a/%2Fb'), true, 'a stored policy literal with an encoded slash still validates (and matches no request)');
});

test('a requested resource is in one normal form: it escapes only what it cannot hold as is, in uppercase hex', () => {
  // `%73ecret` is `secret`: it would pass a DENY on resource://files/secret* (RFC 3986 §6.2.2.2).
  for (const bad of ['resource://files/%73ecret', 'resource://shop/%41', 'resource://a/%2e%2ex', 'resource://a/file%2Etxt', 'resource://a/%7e', 'resource://a/%7E', 'resource://a/%5F', 'resource://a/%3B', 'resource://a/%40', 'resource://a/%21',
    // Lowercase hex is another spelling of the same escape (RFC 3986 §6.2.2.1).
    'resource://docs/%c3%a4', 'resource://docs/%C3%a4', 'resource://a/%2a',
    // The first segment read as a host: its case, a userinfo, a port (empty or not) (§6.2.2.1, §6.2.3).
    'resource://FILES/secret', 'resource://Files/secret', 'resource://x@files/secret', 'resource://files:/secret', 'resource://files:80/secret', 'resource://files./secret',
    // A fragment or a query once decoded.
    'resource://files/secret%23x', 'resource://files/secret%3Fx',
    // Path parameters, which Tomcat and Spring strip; a decomposed "é" (not NFC).
    'resource://files/secret;x/y', 'resource://a/b;c', 'resource://a/..x;y', 'resource://docs/cafe%CC%81']) {
    assert.equal(isRequestResource(bad), false, bad);
  }
  // Every ASCII byte: its escape is accepted exactly when the byte cannot stand in a resource as is.
  const heldAsIs = /^[A-Za-z0-9\-._~!$&'()+,;=:@/%\\#?]$/;
  for (let b = 0; b < 0x80; b++) {
    const c = String.fromCharCode(b);
    const escaped = `resource://a/x%${b.toString(16).toUpperCase().padStart(2, '0')}y`;
    assert.equal(isRequestResource(escaped), !(b < 0x20 || b === 0x7f || heldAsIs.test(c)), escaped);
  }
});

test('timestamps are strict RFC 3339 instants at millisecond precision', () => {
  assert.equal(parseTimestamp('2025-01-31T09:00:00Z'), Date.UTC(2025, 0, 31, 9));
  assert.equal(parseTimestamp('2025-01-31T10:00:00.25+01:00'), Date.UTC(2025, 0, 31, 9, 0, 0, 250));
  assert.equal(parseTimestamp('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29));
  for (const bad of ['2025-02-29T00:00:00Z', '2025-01-31T24:00:00Z', '2025-01-31T09:00:60Z', '2025-01-31 09:00:00Z', '2025-01-31T09:00:00', '2025-01-31T09:00:00.1234Z', '2025-01-31T09:00:00+24:00', 1738314000000]) {
    assert.equal(parseTimestamp(bad), null, String(bad));
  }
});

// The one pattern (also the request schema's) against the definition written out step by step:
// pchars without "*", non-empty segments, every "%" before two hex digits, no dot segment even encoded.
test('the resource URI pattern is the definition, for strings built of the characters that matter', () => {
  const byDefinition = (s: string) => {
    if (!s.startsWith('resource://') || s.length > 512) return false;
    const path = s.slice('resource://'.length);
    if (!/^[A-Za-z0-9\-._~%!$&'()+,;=:@/]*$/.test(path) || /%(?![0-9A-Fa-f]{2})/.test(path)) return false;
    return path.split('/').every((segment) => segment.length > 0 && !['.', '..'].includes(segment.replace(/%2e/gi, '.')));
  };
  const unit = fc.constantFrom('a', '.', '/', '%', '2', 'e', 'E', 'f', 'z', '*', ' ', '%2e', '%2E', '%41');
  let valid = 0;
  fc.assert(fc.property(fc.array(unit, { maxLength: 12 }), (units) => {
    const s = `resource://${units.join('')}`;
    assert.equal(isResourceUri(s), byDefinition(s), s);
    if (byDefinition(s)) valid++;
  }), { numRuns: 20_000 });
  assert.ok(valid > 500, `valid URIs were generated (${valid})`);
});

test('a resource URI is at most 512 characters', () => {
  const at = `resource://${'a'.repeat(512 - 'resource://'.length)}`;
  assert.equal(at.length, 512);
  assert.equal(isResourceUri(at), true);
  assert.equal(isResourceUri(`${at}a`), false);
});
