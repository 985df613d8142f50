/**
 * Runs the built CLI in a real pseudo-terminal (python3's pty module: Node has none of its own), so a
 * test can see the spinner and type Ctrl-C as a person would: the byte 0x03 on the terminal.
 */
import { spawn } from 'node:child_process';
import { BIN } from './index.js';

/**
 * The driver: the CLI on the slave side (stdin, stdout and stderr are the terminal, 24 rows of 80
 * columns unless told another width), the terminal's output copied to our stdout, our stdin copied
 * to the terminal. It exits with the CLI's exit code (128 + n for a signal). Closing the master when the driver dies hangs the CLI up.
 */
const DRIVER = `
import fcntl, os, pty, select, struct, sys, termios
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 24, int(sys.argv[1]), 0, 0))
    os.execv(sys.argv[2], sys.argv[2:])
inputs = [fd, 0]
while True:
    ready, _, _ = select.select(inputs, [], [])
    if fd in ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b''
        if not data:
            break
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    if 0 in ready:
        data = os.read(0, 1024)
        if data:
            os.write(fd, data)
        else:
            inputs.remove(0)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;

export interface PtyCli {
  /** Everything the terminal showed so far (stdout and stderr together, as on a screen). */
  screen(): string;
  /** Types bytes on the terminal's keyboard. */
  type(bytes: string): void;
  /** Resolves when `pattern` appears on the screen; rejects after `ms` or if the CLI ends first. */
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  /** The CLI's exit code, or null if it had to be killed after `limitMs`. */
  exited: Promise<number | null>;
  kill(): void;
}

/** Starts `campaign-sync ...args` in a pseudo-terminal; it is killed after `limitMs` whatever happens. */
export function ptyCli(args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; limitMs?: number; columns?: number }): PtyCli {
  const child = spawn('python3', ['-c', DRIVER, String(opts.columns ?? 80), process.execPath, BIN, ...args], {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let screen = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (screen += d));
  let done = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      done = true;
      resolve(code);
    }),
  );
  const kill = () => {
    if (!done) child.kill('SIGKILL');
  };
  const timer = setTimeout(kill, opts.limitMs ?? 60_000);
  exited.then(() => clearTimeout(timer));
  return {
    screen: () => screen,
    type: (bytes) => child.stdin.write(bytes),
    exited,
    kill,
    waitFor: (pattern, ms = 30_000) =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const poll = () => {
          if (pattern.test(screen)) return resolve();
          if (done || Date.now() - started > ms)
            return reject(new Error(`timed out waiting for ${pattern}; screen ends:\n${screen.slice(-1500)}`));
          setTimeout(poll, 20);
        };
        poll();
      }),
  };
}
