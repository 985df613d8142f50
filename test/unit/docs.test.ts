/**
 * Docs that cannot rot: every command, option, environment variable and exit code of the program is
 * documented in README.md or docs/, every relative link leads to a page and heading that exist, the
 * README stays a front door, and no page speaks of how the code was made instead of what it does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import { ENV } from '../../src/config/env.js';
import { ExitCode } from '../../src/errors.js';

const root = new URL('../../', import.meta.url);
const readmeName = 'README.md';
const pageNames = readdirSync(new URL('docs/', root))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const pages = new Map([readmeName, ...pageNames].map((name) => [name, readFileSync(new URL(name, root), 'utf8')]));
const docs = [...pages.values()].join('\n');
const program = buildProgram(new AbortController().signal, { exitCode: 0 });

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
}

/** The anchors a page offers: its headings' slugs (outside code blocks) and explicit ids. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (heading) out.add(slug(heading[1] as string));
  }
  for (const m of text.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(m[1] as string);
  return out;
}

describe('docs cannot rot', () => {
  it('every command has a description, a line in the README and a section in docs/', () => {
    expect(program.commands.length).toBeGreaterThanOrEqual(8);
    const reference = pageNames.map((n) => pages.get(n)).join('\n');
    for (const cmd of program.commands) {
      expect(cmd.description().length, cmd.name()).toBeGreaterThan(10);
      expect(reference, cmd.name()).toMatch(new RegExp(`^## campaign-sync ${cmd.name()}$`, 'm'));
      expect(pages.get(readmeName), cmd.name()).toContain(`\`campaign-sync ${cmd.name()}\``);
    }
  });

  it('every option of every command is documented', () => {
    for (const cmd of program.commands) {
      for (const opt of cmd.options) {
        if (opt.long === '--help') continue;
        expect(docs, `${cmd.name()} ${opt.long}`).toContain(opt.long as string);
      }
    }
  });

  it('every environment variable and exit code is documented', () => {
    for (const { name } of Object.values(ENV)) expect(docs, name).toContain(`\`${name}\``);
    for (const code of Object.values(ExitCode)) expect(docs, String(code)).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });

  it('every exit code the program can return has its row in the exit codes page', () => {
    const page = pages.get('docs/exit-codes.md') as string;
    for (const code of Object.values(ExitCode)) expect(page, String(code)).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });

  it('the README links every reference page', () => {
    const readme = pages.get(readmeName) as string;
    for (const name of pageNames) expect(readme, name).toContain(`](${name})`);
  });

  it('every relative link leads to a file, and to a heading of it when it names one', () => {
    for (const [name, text] of pages) {
      const base = new URL(name, root);
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const url = file === '' ? base : new URL(file, base);
        if (url.pathname.endsWith('/')) {
          expect(() => readdirSync(url), `${name}: ${target}`).not.toThrow();
          continue;
        }
        const linked = file === '' ? text : readFileSync(url, 'utf8');
        if (anchor !== undefined && url.pathname.endsWith('.md')) expect(anchors(linked), `${name}: ${target}`).toContain(anchor);
      }
    }
  });

  it('the README is a front door: at most 250 lines, no line over 200 characters outside code', () => {
    const readme = pages.get(readmeName) as string;
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    let fenced = false;
    for (const line of readme.split('\n')) {
      if (line.startsWith('```')) fenced = !fenced;
      if (!fenced && !line.startsWith('|')) expect(line.length, line).toBeLessThanOrEqual(200);
    }
  });
});

describe('the docs say what the program does, not how it was made', () => {
  /** The product's own uses of the word: session results and their fields, the session type, an ssh session, PostgreSQL's setting. */
  const PRODUCT_SESSION =
    /session[\s_/-]?(results?|records?|pages?|campaigns?|endpoint|id|pull|floor|scenario|type)\b|SESSION_COMPLETION|`session`|'session'|session[|,]|\|session|--type session|ssh session|idle_in_transaction_session_timeout|idle_session_timeout|session-\d|"session"|flat-session|session (and|or) role|session, role/gi;

  it('no passage names an issue number, a hostile pass or a work session', () => {
    for (const [name, text] of pages) {
      expect(text, name).not.toMatch(/\bissues? #?\d+|(^|[\s(])#\d+\b/im);
      expect(text, name).not.toMatch(/hostile pass/i);
      // A page says what the program does; how it behaved before a change belongs in the changelog.
      expect(text.match(/.{0,40}\b(used to|no longer does|previously|formerly)\b.{0,40}/i)?.[0], name).toBeUndefined();
      const rest = text.replace(PRODUCT_SESSION, '');
      expect(rest.match(/.{0,40}session.{0,40}/i)?.[0], name).toBeUndefined();
    }
  });

  it("no passage points at a file outside the package (the repository's source, tests, benches, CI)", () => {
    for (const [name, text] of pages) {
      expect(text.match(/.{0,30}(\b(src|test|bench|scripts)\/[\w.-]+|\.ci\/run|STYLE\.md|PRODUCT\.md).{0,30}/)?.[0], name).toBeUndefined();
    }
  });
});
