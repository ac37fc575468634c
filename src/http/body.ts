// The JSON body parser of every route, in place of Fastify's. Fastify decodes a body as UTF-8 with
// U+FFFD for bytes that are not, so a body that is not UTF-8 was accepted and audited as if
// U+FFFD had been sent; here the bytes are checked first (node:buffer isUtf8, about 25 ns a KiB)
// and the single chunk a small body arrives in is decoded without a copy. A content coding or a
// charset the parser does not read is 415, and a member that would set a prototype, or a member
// named twice in one object, is named as such rather than called malformed JSON (docs/decisions/0700-well-formed-input-and-router-errors.md).
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { escapePointer, invalidRequest, MAX_FIELD_ERRORS, Problem, type FieldError } from './problem.ts';
import { markRoundedIntegers, memberNames, rebuild, repeatedMembers, whereJsonBreaks } from '../lib/json-parse.ts';
import { POLICY_LIMITS } from '../domain/policy/limits.ts';
import { sendContinue } from './message-checks.ts';

type Done = (error: Error | null, body?: unknown) => void;

export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', parseJsonBody);
}

const notUtf8 = () => invalidRequest([{ pointer: '', code: 'invalid_unicode', message: 'the body is not valid UTF-8' }], 'the body is not valid UTF-8; see errors');
const tooLarge = () => new Problem(413, 'payload_too_large', 'the request body is larger than this service accepts');

/** 415 for a content coding other than identity (RFC 9110 §15.5.16) or a charset other than UTF-8. */
function unreadable(headers: IncomingHttpHeaders): Problem | null {
  const coding = headers['content-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
    return new Problem(415, 'unsupported_media_type', 'the body must not be content-encoded: send it uncompressed', { headers: { 'accept-encoding': 'identity' } });
  }
  const type = headers['content-type']!;
  // The usual header, `application/json` with no parameter, costs one scan for ';'.
  const semi = type.indexOf(';');
  if (semi !== -1 && !utf8Charset(type.slice(semi + 1))) {
    return new Problem(415, 'unsupported_media_type', 'send the body as application/json in UTF-8 (no other charset)');
  }
  return null;
}

function utf8Charset(parameters: string): boolean {
  for (const parameter of parameters.split(';')) {
    const eq = parameter.indexOf('=');
    if (eq === -1 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    let value = parameter.slice(eq + 1).trim().toLowerCase();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    if (value !== 'utf-8' && value !== 'utf8') return false;
  }
  return true;
}

// Reads the body as Fastify's own raw-body reader does (limit, declared length), keeping the bytes.
function parseJsonBody(request: FastifyRequest, payload: Readable, done: Done): void {
  // No route (404, 405): the answer is that, not a verdict on a body nothing would read. Left
  // unread, the problem closes the connection (errors.ts), as Fastify does for other media types.
  if (request.is404) { done(null); return; }
  const refused = unreadable(request.headers);
  if (refused) { done(refused); return; }
  const limit = request.routeOptions.bodyLimit;
  const declared = Number(request.headers['content-length']);
  if (declared > limit) { done(tooLarge()); return; }
  // The body is read from here: a client that asked to continue is asked for it now.
  sendContinue(request.raw);
  const chunks: Buffer[] = [];
  let received = 0;
  const stop = () => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
  };
  function onData(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    received += bytes.length;
    if (received > limit) { stop(); done(tooLarge()); return; }
    chunks.push(bytes);
  }
  function onEnd(error?: Error): void {
    stop();
    if (error) { done(new Problem(400, 'bad_request', 'the request body could not be read')); return; }
    if (!Number.isNaN(declared) && received !== declared) {
      done(new Problem(400, 'invalid_content_length', 'the content-length header does not match the body'));
      return;
    }
    let body: unknown;
    try {
      body = parseJson(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    } catch (problem) { done(problem as Problem); return; }
    done(null, body);
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}

/** JSON from UTF-8 bytes (a leading byte order mark ignored, as RFC 8259 §8.1 allows), or throws a Problem. */
export function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) throw new Problem(400, 'malformed_json', 'the body is declared as JSON but is empty');
  if (!isUtf8(bytes)) throw notUtf8();
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  if (bytes.length > DEFAULT_BODY_BYTES && containers(bytes) > MAX_JSON_CONTAINERS) {
    throw invalidRequest([{ pointer: '', code: 'too_many_values', message: `holds more than ${MAX_JSON_CONTAINERS} arrays and objects` }],
      `the body holds more than ${MAX_JSON_CONTAINERS} arrays and objects; no document Gavel reads needs as many`);
  }
  const text = bytes.toString('utf8', bom ? 3 : 0);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Problem(400, 'malformed_json', `the body is not valid JSON: ${whereJsonBreaks(text, error)}`);
  }
  if (value !== null && typeof value === 'object') {
    const names = memberNames(text);
    // lib/json-parse.ts: V8 can misread a member name written with an escape, so such a text is rebuilt.
    const parsed = names.escaped ? rebuild(text) as object : value;
    if (!clean(parsed)) throw invalidRequest(forbiddenMembers(parsed), 'the body has a member that could set an object\'s prototype; see errors');
    if (tooDeep) throw invalidRequest([{ pointer: '', code: 'too_deep', message: `nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep` }], `the body nests more than ${MAX_JSON_DEPTH} levels deep; see errors`);
    if (widestObject > MAX_OBJECT_MEMBERS && bytes.length > DEFAULT_BODY_BYTES) {
      throw invalidRequest([{ pointer: '', code: 'too_many_members', message: `has an object of more than ${MAX_OBJECT_MEMBERS} members` }],
        `the body has an object of more than ${MAX_OBJECT_MEMBERS} members; no document Gavel reads needs as many`);
    }
    if (walkedMembers !== names.count) throw invalidRequest(duplicateMembers(text), 'the body names a member twice in one object; see errors');
    // Rounded first: its walk names the other inexact numbers too, so one answer lists both kinds.
    if (names.rounded) throw invalidRequest(roundedIntegers(text), 'the body has a number JSON does not carry exactly; see errors');
    if (inexactNumber) throw invalidRequest(inexactNumbers(parsed), 'the body has a number JSON does not carry exactly; see errors');
    return parsed;
  }
  return value;
}

// What secure-json-parse (Fastify's parser) refuses: a `__proto__` member, or a `constructor`
// member whose value has a `prototype` member. JSON.parse makes such members own data properties,
// harmless until something copies them by assignment (Object.assign, a merge), so none passes.
const hasProto = (node: object) => Object.hasOwn(node, '__proto__');
function hasConstructorPrototype(node: object): boolean {
  if (!Object.hasOwn(node, 'constructor')) return false;
  const c = (node as { constructor: unknown }).constructor;
  return c !== null && typeof c === 'object' && Object.hasOwn(c, 'prototype');
}

// One walk over the parsed objects, about 75 ns for an authorize body, where secure-json-parse's
// two regular expressions over the whole text took about 280 ns. Iterative: JSON.parse nests
// deeper than the stack goes. The stack is shared: parsing is synchronous.
// The same walk counts the objects' members (walkedMembers) for the duplicate check below, and
// notes a number JSON.parse could not read exactly (inexactNumber).
// It also notes a body nested deeper than MAX_JSON_DEPTH (tooDeep), and its widest object (widestObject).
const pending: object[] = [];
const depths: number[] = [];
let walkedMembers = 0;
let widestObject = 0;
let inexactNumber = false;
let tooDeep = false;
function clean(root: object): boolean {
  walkedMembers = 0;
  widestObject = 0;
  inexactNumber = false;
  tooDeep = false;
  pending.push(root);
  depths.push(1);
  while (pending.length > 0) {
    const node = pending.pop()!;
    const depth = depths.pop()!;
    if (hasProto(node) || hasConstructorPrototype(node)) { pending.length = 0; depths.length = 0; return false; }
    if (Array.isArray(node)) {
      // By index: `for…in` over an array makes a string of every index, megabytes for a large body.
      for (let i = 0; i < node.length; i++) look(node[i], depth);
    } else {
      let members = 0;
      for (const key in node) {
        members++;
        look((node as Record<string, unknown>)[key], depth);
      }
      walkedMembers += members;
      if (members > widestObject) widestObject = members;
    }
  }
  return true;
}

function look(v: unknown, depth: number): void {
  if (v !== null && typeof v === 'object') {
    if (depth >= MAX_JSON_DEPTH) tooDeep = true;
    else { pending.push(v); depths.push(depth + 1); }
  } else if (typeof v === 'number' && !isExact(v)) inexactNumber = true;
}

/**
 * Arrays and objects a large body (a policy document, up to 8 MiB) may hold. Each costs the parser
 * about 70 bytes of heap: 2.7 million of them (`{},` repeated) ran the process out of memory before
 * the policy's own limits, read after parsing, could refuse them. A valid document holds at most two
 * per condition node (an `and`, `or` or `not` is an object and its `args`; an `in` an object and its
 * `values`, whose elements are nodes too), one per rule, and a few more (POLICY_LIMITS): about
 * 410,000, with room for the body around it.
 */
export const MAX_JSON_CONTAINERS = 2 * POLICY_LIMITS.maxTotalNodes + POLICY_LIMITS.maxRules + 1_000;
/**
 * Members one object of a large body may hold. With every error collected, each member a closed
 * schema does not know became an Ajv error and then a field error before the answer kept 100: an
 * 8 MiB body of 900,000 members (`"k":0,` repeated) ran the 256 MB heap out. No object of a document
 * Gavel reads holds more than a few dozen (a policy's lists are arrays).
 */
export const MAX_OBJECT_MEMBERS = 1_000;
/** Bodies up to the global body limit are never counted: they cannot hold as many. */
const DEFAULT_BODY_BYTES = 64 * 1024;

/**
 * `{` and `[` bytes outside strings (a policy's strings may hold brackets; a byte of a multi-byte
 * UTF-8 character is never `"`, `\`, `{` or `[`). On text that is not JSON the count means nothing,
 * and the parser refuses it anyway.
 */
function containers(bytes: Buffer): number {
  let n = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++; // a backslash: the next byte is escaped (a quote or backslash, say)
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) n++;
  }
  return n;
}

/**
 * How deep a body's arrays and objects may nest. Recursive code downstream (JSON.stringify of a
 * merchant payload, the response serializers, canonical JSON) overflows the stack some thousands
 * of levels down, after a decision committed; nothing Gavel reads needs more than a policy's 32
 * levels of conditions (two JSON levels each, under four of document).
 */
export const MAX_JSON_DEPTH = 128;

// I-JSON (RFC 7493 §2.2): an integer beyond 2^53 - 1 in magnitude reads as a neighbour
// (9007199254740993 as ...992), and 1e400 as Infinity, which no canonical JSON can write (a 500
// once). The value a merchant, a policy or the audit log would get is not the one sent, so such a
// number is refused where it stands; a fraction keeps JSON's usual reading as the nearest double.
const isExact = (n: number) => Number.isSafeInteger(n) || (Number.isFinite(n) && !Number.isInteger(n));

const ROUNDED = Object.freeze({});
const INEXACT_MESSAGE = 'is a number JSON does not carry exactly (integers are exact up to 2^53 - 1 in magnitude): no amount, limit or policy literal may be larger; a value of more digits in a merchant payload (an account number) goes as a string';
const ROUNDED_MESSAGE = 'is written as a non-integer but reads as an integer; send the exact value';
/** Bodies up to this size have each such number located; JSON.parse with a reviver costs 20-40 times plain parsing. */
const LOCATE_ROUNDED_UP_TO = 64 * 1024;
/**
 * Every number written as a non-integer that reads as an integer (5000.0000000000001 as 5000), with
 * its pointer: a money amount in minor units would be recorded as another than was sent. Only for a
 * text memberNames found one in; a fraction that reads as a fraction keeps JSON's usual reading.
 * The numbers not read exactly (inexactNumbers) are named in the same walk, in text order.
 */
function roundedIntegers(text: string): FieldError[] {
  if (text.length > LOCATE_ROUNDED_UP_TO) return [{ pointer: '', code: 'inexact_number', message: `holds a number that ${ROUNDED_MESSAGE}` }];
  const errors: FieldError[] = [];
  const root = markRoundedIntegers(text, ROUNDED);
  if (root === ROUNDED) return [{ pointer: '', code: 'inexact_number', message: ROUNDED_MESSAGE }];
  if (root !== null && typeof root === 'object') {
    eachMember(root, (pointer, _key, v) => {
      if (v === ROUNDED) errors.push({ pointer, code: 'inexact_number', message: ROUNDED_MESSAGE });
      else if (typeof v === 'number' && !isExact(v)) errors.push({ pointer, code: 'inexact_number', message: INEXACT_MESSAGE });
    }, errors);
  }
  return errors;
}

/** Every number not read exactly, with its pointer; only for a body that has one. */
function inexactNumbers(root: object): FieldError[] {
  const errors: FieldError[] = [];
  eachMember(root, (pointer, _key, v) => {
    if (typeof v === 'number' && !isExact(v)) errors.push({ pointer, code: 'inexact_number', message: INEXACT_MESSAGE });
  }, errors);
  return errors;
}

// A member named twice in one object is refused (I-JSON, RFC 7493 §2.3): JSON.parse keeps the last,
// while a proxy or a signer in front of Gavel may have read the first, and the audit would then
// record a request other than the one they checked. JSON.parse drops the earlier member of each
// pair, so the parsed objects hold fewer members than the text names exactly when a name repeats.
// The text's names are counted by lib/json-parse.ts (memberNames), about one indexOf per string.

/** Every repeated member with its pointer; only for a body that has one. */
function duplicateMembers(text: string): FieldError[] {
  return repeatedMembers(text, MAX_FIELD_ERRORS + 1).map(({ pointer, name }) => ({ pointer, code: 'duplicate_member', message: `the member ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)} appears more than once in this object` }));
}

/** Every forbidden member with its pointer; only for a body that has one. */
function forbiddenMembers(root: object): FieldError[] {
  const errors: FieldError[] = [];
  eachMember(root, (pointer, key, v, holder) => {
    if (key === '__proto__' && !Array.isArray(holder)) errors.push({ pointer, code: 'forbidden_member', message: 'a member named "__proto__" is not accepted' });
    else if (key === 'constructor' && hasConstructorPrototype(holder)) errors.push({ pointer, code: 'forbidden_member', message: 'a "constructor" member holding a "prototype" member is not accepted' });
  }, errors);
  return errors;
}

/**
 * Every member and element under `root`, in text order, with its JSON Pointer: the walk the error
 * lists above share. Iterative, as JSON.parse nests deeper than the stack goes.
 */
function eachMember(root: object, visit: (pointer: string, key: string, value: unknown, holder: object) => void, errors?: readonly unknown[]): void {
  const todo: { node: object; at: string; keys: string[]; next: number }[] = [{ node: root, at: '', keys: Object.keys(root), next: 0 }];
  while (todo.length > 0) {
    // One past the errors an answer lists is enough to say there were more (problem.ts).
    if (errors && errors.length > MAX_FIELD_ERRORS) return;
    const top = todo[todo.length - 1]!;
    if (top.next === top.keys.length) { todo.pop(); continue; }
    const key = top.keys[top.next++]!;
    const value = (top.node as Record<string, unknown>)[key];
    const pointer = `${top.at}/${escapePointer(key)}`;
    visit(pointer, key, value, top.node);
    if (value !== null && typeof value === 'object') todo.push({ node: value, at: pointer, keys: Object.keys(value), next: 0 });
  }
}
