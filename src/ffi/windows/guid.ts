/** GUID text → the 16-byte struct (Data1..3 little-endian, Data4 as bytes), case-insensitive. */
const GUID_RE = /^\{?([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})\}?$/i;

export interface GuidStruct {
  Data1: number;
  Data2: number;
  Data3: number;
  Data4: number[];
}

/** Parses `8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708` (braces optional); throws naming the text. */
export function parseGuid(text: string): GuidStruct {
  const m = GUID_RE.exec(text.trim());
  if (!m) throw new Error(`not a GUID: ${JSON.stringify(text)}`);
  const [, d1, d2, d3, d4a, d4b] = m as unknown as [string, string, string, string, string, string];
  const tail = d4a + d4b;
  const Data4: number[] = [];
  for (let i = 0; i < 16; i += 2) Data4.push(parseInt(tail.slice(i, i + 2), 16));
  return { Data1: parseInt(d1, 16), Data2: parseInt(d2, 16), Data3: parseInt(d3, 16), Data4 };
}
