import { execFileSync } from 'node:child_process';

/**
 * A strict RFC 4180 reader: records end with CRLF; a field holding CR, LF or `"` must be quoted, and a
 * quoted field must be followed by `,`, CRLF or the end. Anything else throws, naming the offset: a
 * file this accepts splits into the same rows in every standard reader.
 */
export function parseStrictCsv(text: string): string[][] {
  const rows: string[][] = [];
  let i = 0;
  while (i < text.length) {
    const row: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          const q = text.indexOf('"', i);
          if (q < 0) throw new Error(`unterminated quoted field from offset ${i}`);
          field += text.slice(i, q);
          if (text[q + 1] === '"') {
            field += '"';
            i = q + 2;
          } else {
            i = q + 1;
            break;
          }
        }
      } else {
        const start = i;
        while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n' && text[i] !== '"') i++;
        field = text.slice(start, i);
      }
      row.push(field);
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text.startsWith('\r\n', i)) {
        i += 2;
        break;
      }
      if (i >= text.length) break;
      throw new Error(
        `bare ${JSON.stringify(text[i])} in a field at offset ${i}: ${JSON.stringify(text.slice(Math.max(0, i - 40), i + 40))}`,
      );
    }
    rows.push(row);
  }
  const width = rows[0]?.length ?? 0;
  rows.forEach((r, n) => {
    if (r.length !== width) throw new Error(`record ${n + 1} has ${r.length} fields, the header ${width}`);
  });
  return rows;
}

/** The rows of a CSV file as Python's `csv` module reads them (strict mode), the reader analysts use. */
export function parseWithPython(path: string): string[][] {
  const script =
    'import csv, json, sys\n' +
    "with open(sys.argv[1], newline='', encoding='utf-8') as f:\n" +
    '    json.dump(list(csv.reader(f, strict=True)), sys.stdout)\n';
  return JSON.parse(execFileSync('python3', ['-c', script, path], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })) as string[][];
}
