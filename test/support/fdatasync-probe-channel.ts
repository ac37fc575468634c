// What the fdatasync probe (fdatasync-probe.ts, preloaded into a writer thread) reports, and on
// which broadcast channel: apart from the probe, so a test can read it without loading the probe.
export const PROBE_CHANNEL = 'gavel-fdatasync-probe';
export type ProbeMessage = { phase: 'start' | 'end'; path: string };
