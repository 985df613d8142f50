import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../src/ui/shell.js';

/** What `shell` makes of `word` as one argument: printf's %s between markers. */
function parsed(shell: string, word: string): string {
  const r = spawnSync(shell, ['-c', `printf '<%s>' ${word}`], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

describe('shellWord: a value printed in a hint pastes as one word', () => {
  it('leaves plain paths and URLs as they are, for readability', () => {
    for (const plain of ['m.db', './campaign-sync-demo.db', '/tmp/a_b-c.db', 'données.db', 'http://127.0.0.1:8080', 'a,b:c@d%e+f']) {
      expect(shellWord(plain)).toBe(plain);
    }
  });

  it("single-quotes the rest, ' written as '\\''", () => {
    expect(shellWord('')).toBe("''");
    expect(shellWord('team mirror.db')).toBe("'team mirror.db'");
    expect(shellWord("my demo's $(id).db")).toBe("'my demo'\\''s $(id).db'");
    expect(shellWord('http://[::1]:8080')).toBe("'http://[::1]:8080'");
    for (const word of ['~/m.db', '=m.db', '*.db', 'a;b', 'a|b', 'a&b', 'a`id`b', 'a"b', 'a\\b', '#m.db', '!m.db', '{a,b}']) {
      expect(shellWord(word)).toBe(`'${word.replaceAll("'", "'\\''")}'`);
    }
  });

  it("writes a value with control, C1 or bidi characters as $'…' with escapes: no raw escape reaches the terminal", () => {
    expect(shellWord('esc\u001b]0;t\u0007.db')).toBe("$'esc\\x1b]0;t\\x07.db'");
    expect(shellWord("a\nb\t'\\c")).toBe("$'a\\nb\\t\\'\\\\c'");
    // A C1 or bidi character as \u, so bash and zsh write its UTF-8 bytes, not one raw byte.
    expect(shellWord('x\u009by\u202ez.db')).toBe("$'x\\u009by\\u202ez.db'");
  });

  it('dash, bash and zsh read each back as the value itself', () => {
    const values = ['team mirror.db', "my demo's $(id).db", "''", 'a\\b', '`id`', '$HOME', 'a"b', '~x', 'é ü'];
    for (const shell of ['dash', 'bash', 'zsh']) {
      for (const v of values) expect(parsed(shell, shellWord(v)), `${shell} ${v}`).toBe(`<${v}>`);
    }
    for (const shell of ['bash', 'zsh']) {
      for (const v of ['esc\u001b]0;t\u0007.db', "a\nb\t'\\c", 'x\u009by\u202ez']) {
        expect(parsed(shell, shellWord(v)), `${shell} ${JSON.stringify(v)}`).toBe(`<${v}>`);
      }
    }
  });
});
