import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Output } from '../../../src/ui/output.js';
import { passLine } from '../../../src/ui/summary.js';

function sink(tty: boolean) {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += chunk;
      done();
    },
  }) as Writable & { isTTY?: boolean };
  stream.isTTY = tty;
  return { stream, text: () => text };
}

function output(flags: { json?: boolean; quiet?: boolean }, env: NodeJS.ProcessEnv, tty = true) {
  const out = sink(tty);
  const err = sink(tty);
  return { o: new Output(flags, { stdout: out.stream, stderr: err.stream }, env), out, err };
}

describe('output rules', () => {
  it('spinners only on a TTY, and never with --json, --quiet or CI', () => {
    expect(output({}, {}).o.interactive).toBe(true);
    expect(output({}, {}, false).o.interactive).toBe(false);
    expect(output({ json: true }, {}).o.interactive).toBe(false);
    expect(output({ quiet: true }, {}).o.interactive).toBe(false);
    expect(output({}, { CI: 'true' }).o.interactive).toBe(false);
  });

  it('honours NO_COLOR', () => {
    expect(output({}, {}).o.color).toBe(true);
    expect(output({}, { NO_COLOR: '1' }).o.color).toBe(false);
    const { o, err } = output({}, { NO_COLOR: '1' });
    o.warn('careful');
    expect(err.text()).toBe('warning: careful\n');
  });

  it('data on stdout, people on stderr; --json prints only the document; --quiet only errors', () => {
    const human = output({}, {});
    human.o.print('table');
    human.o.info('hint');
    human.o.document({ a: 1 });
    expect(human.out.text()).toBe('table\n');
    expect(human.err.text()).toBe('hint\n');
    const json = output({ json: true }, {});
    json.o.print('table');
    json.o.info('hint');
    json.o.document({ cursor: 2n ** 63n - 1n });
    expect(JSON.parse(json.out.text())).toEqual({ cursor: '9223372036854775807' });
    expect(json.err.text()).toBe('');
    const quiet = output({ quiet: true }, {}, false);
    quiet.o.print('table');
    quiet.o.warn('w');
    quiet.o.error('boom');
    expect(quiet.out.text()).toBe('');
    expect(quiet.err.text()).toBe('error: boom\n');
  });

  it('one line per pass, with singular and plural right', () => {
    const line = passLine({ streams: [], skipped: [], requests: 1, records: 0, bytes: 0, durationMs: 12, interrupted: false });
    expect(line).toBe('0 records (0 new, 0 updated), 0 streams, 1 request, 12 ms');
  });
});
