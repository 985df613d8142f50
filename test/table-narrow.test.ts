/**
 * A table too wide for the terminal: below a readable column width it is stacked, one block a row,
 * instead of cutting every cell to `campa…` (a 60-column terminal showed nothing of `status`).
 */
import { describe, expect, it } from 'vitest';
import { renderTable } from '../src/ui/table.js';

const HEAD = ['campaign', 'stream', 'cursor', 'records', 'last success', 'last error'];
const ROWS = [
  ['role-2-trust-safety-reviewers', 'role DETAILED', '1024', '1,500', '2026-11-25T07:02:19.435Z', ''],
  ['session-1-customer-support-emea', 'session', '99', '250', '2026-11-25T07:02:19.435Z', 'GET /v1/campaigns/session/results: 503'],
];

describe('tables on a narrow terminal', () => {
  it('stacks the rows when columns would be cut below a readable width, every line within the width', () => {
    const out = renderTable(HEAD, ROWS, [], [], { tsv: false, width: 60 });
    const lines = out.split('\n');
    for (const line of lines) expect(Array.from(line).length).toBeLessThanOrEqual(60);
    expect(lines[0]).toBe('role-2-trust-safety-reviewers');
    expect(out).toContain('  records:      1,500');
    expect(out).toContain('  last success: 2026-11-25T07:02:19.435Z');
    expect(out).toContain('session-1-customer-support-emea');
    expect(out).toMatch(/ {2}last error: {3}GET \/v1\/campaigns\/session\/results: 503/);
    expect(out).not.toMatch(/[┌│]/);
  });

  it('keeps the boxed table when it fits, or fits with readable columns', () => {
    for (const width of [200, 140]) {
      const out = renderTable(HEAD, ROWS, [], [], { tsv: false, width });
      expect(out).toMatch(/┌/);
      for (const line of out.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(width);
    }
  });

  it('a very narrow terminal still gets every row and label, cut to the width', () => {
    const out = renderTable(HEAD, ROWS, [], [], { tsv: false, width: 30 });
    for (const line of out.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(30);
    expect(out.match(/ {2}records: /g)).toHaveLength(2);
  });
});
