import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli.js';
import { ENV } from '../src/config/env.js';
import { ExitCode } from '../src/errors.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const program = buildProgram(new AbortController().signal, { exitCode: 0 });

describe('docs cannot rot', () => {
  it('every command has a description and a README section', () => {
    expect(program.commands.length).toBeGreaterThanOrEqual(8);
    for (const cmd of program.commands) {
      expect(cmd.description().length, cmd.name()).toBeGreaterThan(10);
      expect(readme, cmd.name()).toContain(`### campaign-sync ${cmd.name()}`);
    }
  });

  it('every option of every command is in the README', () => {
    for (const cmd of program.commands) {
      for (const opt of cmd.options) {
        if (opt.long === '--help') continue;
        expect(readme, `${cmd.name()} ${opt.long}`).toContain(opt.long as string);
      }
    }
  });

  it('every environment variable and exit code is in the README', () => {
    for (const { name } of Object.values(ENV)) expect(readme, name).toContain(`\`${name}\``);
    for (const code of Object.values(ExitCode)) expect(readme, String(code)).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });
});
