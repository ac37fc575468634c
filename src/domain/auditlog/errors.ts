// Errors a caller can cause (malformed notes, bad sizes, hostile input) carry a stable code,
// so adapters map them to responses without string matching.

export type AuditLogErrorCode =
  | 'invalid_size' // a tree size or index that is not a safe non-negative integer, or out of range
  | 'missing_node' // the node reader did not hold a node the operation needs
  | 'invalid_event' // the audit event cannot be encoded as canonical JSON
  | 'malformed_note' // a signed note, checkpoint, vkey or request body that does not parse
  | 'unverified_note' // no signature from a known key verifies, or a known key's signature fails
  | 'state_mismatch'; // the log's state row names a root its stored tree does not have at that size

export class AuditLogError extends Error {
  readonly code: AuditLogErrorCode;
  constructor(code: AuditLogErrorCode, message: string) {
    super(message);
    this.name = 'AuditLogError';
    this.code = code;
  }
}
