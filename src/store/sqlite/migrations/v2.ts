/** Version 2: settings of the database itself, such as where its checkpoints' records went. */
export const V2 = `
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;
