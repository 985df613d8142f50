// Peak resident memory of a child process, read from /proc/<pid>/status (VmHWM) while it runs.
// Shared by `npm run bench` and the export memory test.
import { readFileSync } from 'node:fs';

/** Resolves with the child's peak RSS in MiB once it exits with code 0; rejects otherwise. */
export function peakRssMb(child, everyMs = 25) {
  return new Promise((resolve, reject) => {
    let peakKb = 0;
    const timer = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peakKb = Math.max(peakKb, Number(m[1]));
      } catch {
        // The process has just exited.
      }
    }, everyMs);
    child.on('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearInterval(timer);
      code === 0 ? resolve(peakKb / 1024) : reject(new Error(`process exited with code ${code}`));
    });
  });
}
