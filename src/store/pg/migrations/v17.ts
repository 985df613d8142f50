/**
 * Version 17: one mirror, one service, as SQLite's schema 15: from this version a worker records the
 * base URL of the service the mirror mirrors in `meta` (key `service_url`) and refuses another one.
 * The only change is the comment on `meta` that says so: the version rises so that a worker of a
 * release that does not check the service refuses this schema (a newer one) rather than pull another
 * service's records into it. A schema upgraded to 17 records no URL yet and adopts the first one.
 * May run again on a schema that has it.
 */
export const V17 = `
COMMENT ON TABLE meta IS 'campaign-sync state; service_url: the base URL of the service this mirror mirrors';
`;
