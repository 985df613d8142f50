/**
 * Statements built from the column lists of store/model/rows.ts, so no column list is written twice.
 */
import { COLUMNS, type Table } from '../model/rows.js';

/*
 * The key goes last in every statement below, so one row of store/model/rows.ts (its values, then its key)
 * binds the insert and the update alike. Rows are bound as spread arguments, faster than binding
 * one array with better-sqlite3 12 (docs/performance.md).
 */
export const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export function insertIgnore(table: Table): string {
  const cols = COLUMNS[table];
  return `INSERT INTO ${table} (${cols.join(', ')}, id) VALUES (${placeholders(cols.length + 1)}) ON CONFLICT (id) DO NOTHING`;
}

export function update(table: Table): string {
  return `UPDATE ${table} SET ${COLUMNS[table].map((c) => `${c} = ?`).join(', ')} WHERE id = ?`;
}

export function upsert(table: Table): string {
  const cols = COLUMNS[table];
  return `${insertIgnore(table).replace(/DO NOTHING$/, 'DO UPDATE SET ')}${cols.map((c) => `${c} = excluded.${c}`).join(', ')}`;
}
