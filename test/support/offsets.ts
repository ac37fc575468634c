// Instants written at other UTC offsets than Z, for tests that send the same instant in many forms.

/** `ms` as RFC 3339 at a UTC offset of `minutes` (0 gives "+00:00"), with milliseconds. */
export function withOffset(ms: number, minutes: number): string {
  const local = new Date(ms + minutes * 60_000).toISOString().slice(0, -1);
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
