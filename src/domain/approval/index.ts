export { APPROVAL_STATEMENT_TYPE, STATEMENT_VERSION, approvalStatement, type ApprovalStatement, type ObligationFacts } from './statement.ts';
export { verifyApproval } from './verify.ts';
export { parseApprovalPublicKey, type ParsedKey } from './public-key.ts';
export { APPROVAL_STATUSES, effectiveStatus, type ApprovalStatus, type StoredStatus } from './status.ts';
export { uncoveredField, type RequestFacts } from './covers.ts';
