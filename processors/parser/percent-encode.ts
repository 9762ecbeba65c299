/** A byte of an encoded URL query as the URL standard writes it: `%XX` if in the query percent-encode set, else the ASCII character. */
export function percentByte(byte: number): string {
  return inQuerySet(byte) ? '%' + HEX[byte] : String.fromCharCode(byte);
}

// the URL standard's query percent-encode set for special schemes: C0, space, " # < > ' and non-ASCII
function inQuerySet(byte: number): boolean {
  return (
    byte < 0x21 || byte > 0x7e || byte === 0x22 || byte === 0x23 || byte === 0x3c || byte === 0x3e || byte === 0x27
  );
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).toUpperCase().padStart(2, '0'));
