/**
 * Version 15: one mirror, one service. From this version a pull records the base URL of the service
 * the mirror mirrors in `meta` (key `service_url`) and refuses another one. No table changes: the
 * version rises so that a release that does not check the service refuses to open this mirror
 * (a newer schema) rather than pull another service's records into it. A mirror upgraded to 15
 * records no URL yet and adopts the first one it is pulled with.
 */
export const V15 = `
-- meta.service_url: the base URL of the service this mirror mirrors (written by pulls, not here).
SELECT 1;
`;
