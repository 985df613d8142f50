/**
 * config/config.ts serviceUrl: the service a base URL names, as a mirror records it (store/model/service.ts):
 * spellings of one service are one text, other services another.
 */
import { describe, expect, it } from 'vitest';
import { resolveBaseUrl, serviceUrl } from '../../../src/config/config.js';
import { serviceDecision } from '../../../src/store/model/service.js';

const service = (text: string) => serviceUrl(resolveBaseUrl(text, false));

describe('serviceUrl', () => {
  it('one service whatever the spelling: scheme and host in any case, the default port, a trailing slash or /v1', () => {
    for (const text of [
      'https://api.example.com',
      'HTTPS://API.Example.COM',
      'https://api.example.com:443',
      'https://api.example.com/',
      'https://api.example.com/v1',
      'https://api.example.com/v1/',
      'https://api.example.com//',
      'https://api.example.com?',
    ])
      expect(service(text), text).toBe('https://api.example.com');
    expect(service('https://API.example.com:8443/Tenant/v1/')).toBe('https://api.example.com:8443/Tenant');
    expect(service('http://[::1]:80/v1')).toBe('http://[::1]');
  });

  it('another port, path, scheme or host is another service', () => {
    const base = service('https://api.example.com/eu');
    for (const text of [
      'https://api.example.com:8443/eu',
      'https://api.example.com/us',
      'http://127.0.0.1/eu',
      'https://api2.example.com/eu',
    ])
      expect(service(text), text).not.toBe(base);
    // A path's case is the server's to read: kept.
    expect(service('https://api.example.com/EU')).not.toBe(base);
  });
});

describe('serviceDecision', () => {
  const claim = { url: 'https://a.example', replace: false, where: '--base-url' };
  it('keeps the same, records a first one or a switch, and asks whether the mirror holds anything of another', () => {
    expect(serviceDecision('https://a.example', claim)).toBe('keep');
    expect(serviceDecision(undefined, claim)).toBe('record');
    expect(serviceDecision('https://b.example', { ...claim, replace: true })).toBe('record');
    expect(serviceDecision('https://b.example', claim)).toBe('held');
  });
});
