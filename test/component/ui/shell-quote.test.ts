import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandName, shellWord } from '../../../src/ui/shell.js';
import { tempDir } from '../../helpers/index.js';
import { needs } from '../../helpers/tools.js';

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

  it('dash, bash and zsh read each back as the value itself', (ctx) => {
    needs(ctx, 'dash', 'zsh');
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

describe('commandName: the hints name a command that runs where they are printed', () => {
  /** A project folder with the package installed in it, as `npm install` leaves it. */
  function installed(): { dir: string; launcher: string } {
    const dir = tempDir();
    const real = join(dir, 'node_modules', 'campaign-sync', 'bin', 'campaign-sync.js');
    mkdirSync(join(dir, 'node_modules', 'campaign-sync', 'bin'), { recursive: true });
    mkdirSync(join(dir, 'node_modules', '.bin'));
    writeFileSync(real, '#!/usr/bin/env node\n');
    chmodSync(real, 0o755);
    const launcher = join(dir, 'node_modules', '.bin', 'campaign-sync');
    symlinkSync('../campaign-sync/bin/campaign-sync.js', launcher);
    return { dir, launcher };
  }

  it('a local install is named by its path from the working folder, never a bare name or npx that would look it up in the registry', () => {
    const { dir, launcher } = installed();
    expect(commandName(launcher, { PATH: '/usr/bin:/bin' }, dir)).toBe('./node_modules/.bin/campaign-sync');
    // Run from elsewhere, the absolute path, quoted when it needs to be.
    expect(commandName(launcher, { PATH: '/usr/bin:/bin' }, tempDir())).toBe(shellWord(launcher));
  });

  it('a global install (the name on PATH leads to this launcher) is campaign-sync; another program of that name is not', () => {
    const { dir, launcher } = installed();
    const bin = join(dir, 'node_modules', '.bin');
    expect(commandName(launcher, { PATH: `/usr/bin:${bin}` }, tempDir())).toBe('campaign-sync');
    const other = tempDir();
    writeFileSync(join(other, 'campaign-sync'), '#!/bin/sh\n');
    chmodSync(join(other, 'campaign-sync'), 0o755);
    expect(commandName(launcher, { PATH: `${other}:${bin}` }, dir)).toBe('./node_modules/.bin/campaign-sync');
  });

  it("under npx, the path: npx's PATH holds node_modules/.bin, the shell's does not", () => {
    const { dir, launcher } = installed();
    const bin = join(dir, 'node_modules', '.bin');
    expect(commandName(launcher, { PATH: `${bin}:/usr/bin`, npm_command: 'exec' }, dir)).toBe('./node_modules/.bin/campaign-sync');
  });

  it('a clone run as ./bin/campaign-sync.js, or a path with a space, pastes as one word', () => {
    const clone = join(tempDir(), 'my clone');
    mkdirSync(join(clone, 'bin'), { recursive: true });
    const launcher = join(clone, 'bin', 'campaign-sync.js');
    writeFileSync(launcher, '');
    expect(commandName(launcher, {}, clone)).toBe('./bin/campaign-sync.js');
    expect(commandName(launcher, {}, tempDir())).toBe(`'${launcher}'`);
  });
});
