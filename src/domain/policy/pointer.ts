// RFC 6901: "~" is written "~0" and "/" is written "~1" inside a reference token.
export function pointerAppend(pointer: string, token: string | number): string {
  if (typeof token === 'number') return `${pointer}/${token}`;
  return `${pointer}/${token.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}
