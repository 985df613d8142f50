/**
 * A comment that points at a file (`store/pg/schema.ts`, `./budget-slots.ts`) points at one that
 * exists: relative to src/, to the commenting file's folder, or (test/, scripts/) to the repository.
 * Comments are read with TypeScript's scanner: SQL comments and paths in strings or templates are not comments.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

/** A path of at least two parts ending in .ts: `sync/pass.ts`, `./x.ts`, `../model/rows.ts`. */
const PATH = /(?<![\w./-])(?:\.{1,2}\/)*[\w.-]+(?:\/[\w.-]+)+\.ts\b/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const K = ts.SyntaxKind;

/** Tokens after which a `/` divides; after any other, it starts a regular expression. */
const ENDS_OPERAND = new Set([
  K.Identifier,
  K.PrivateIdentifier,
  K.NumericLiteral,
  K.BigIntLiteral,
  K.StringLiteral,
  K.NoSubstitutionTemplateLiteral,
  K.TemplateTail,
  K.RegularExpressionLiteral,
  K.CloseParenToken,
  K.CloseBracketToken,
  K.CloseBraceToken,
  K.ThisKeyword,
  K.SuperKeyword,
  K.TrueKeyword,
  K.FalseKeyword,
  K.NullKeyword,
  K.PlusPlusToken,
  K.MinusMinusToken,
  K.ExclamationToken,
]);

/**
 * The text of every comment of a TypeScript file, by TypeScript's scanner (a parse finds the same
 * comments in src/ and test/, six times slower). The scanner needs two hints a parser would give:
 * whether a `/` starts a regular expression, and whether a `}` resumes a template.
 */
function commentsOf(text: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  const found: string[] = [];
  const braces: Array<'template' | 'block'> = [];
  let previous = K.Unknown;
  for (let t = scanner.scan(); t !== K.EndOfFileToken; t = scanner.scan()) {
    if (t === K.SingleLineCommentTrivia || t === K.MultiLineCommentTrivia) found.push(scanner.getTokenText());
    if (t === K.SingleLineCommentTrivia || t === K.MultiLineCommentTrivia || t === K.WhitespaceTrivia || t === K.NewLineTrivia) continue;
    if ((t === K.SlashToken || t === K.SlashEqualsToken) && !ENDS_OPERAND.has(previous)) t = scanner.reScanSlashToken();
    if (t === K.TemplateHead) braces.push('template');
    else if (t === K.OpenBraceToken) braces.push('block');
    else if (t === K.CloseBraceToken && braces.pop() === 'template') {
      t = scanner.reScanTemplateToken(false);
      if (t === K.TemplateMiddle) braces.push('template');
    }
    previous = t;
  }
  return found;
}

/** The file paths a comment names. */
const pathsIn = (comment: string): string[] => [...comment.matchAll(PATH)].map((m) => m[0]);

/** Whether `path`, named in a comment of `file`, is a file of the repository. */
function exists(file: string, path: string): boolean {
  const bases = path.startsWith('.') ? [dirname(file)] : [SRC, dirname(file), ROOT];
  return bases.some((base) => existsSync(resolve(base, path)));
}

describe('comments that name a file', () => {
  it('are read from comments alone', () => {
    const text = [
      '/** Reads store/a/b.ts and ./c/d.ts. */',
      "const sql = '-- store/not/comment.ts'; // after code/here.ts",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text holding a template, as the scanner reads it.
      'const t = `${1 /* in/template.ts */} not/this.ts ${`${2}`} nor/that.ts`; const r = /\\/x\\/y.ts/; // end/of/line.ts',
      'const half = t.length / 2; // after/division.ts',
      '// last/line.ts',
    ].join('\n');
    expect(commentsOf(text).flatMap(pathsIn).sort()).toEqual(
      ['./c/d.ts', 'after/division.ts', 'code/here.ts', 'end/of/line.ts', 'in/template.ts', 'last/line.ts', 'store/a/b.ts'].sort(),
    );
  });

  it('name files that exist (relative to src/, to their own folder, or to the repository)', () => {
    const missing: string[] = [];
    for (const file of files(SRC)) {
      for (const comment of commentsOf(readFileSync(file, 'utf8'))) {
        for (const path of pathsIn(comment)) if (!exists(file, path)) missing.push(`${relative(ROOT, file)}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
