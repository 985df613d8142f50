/** Setup file (vitest.config.ts): after each test file, what the helpers started is closed (./file-end.ts). */
import { afterAll } from 'vitest';
import { runFileEnd } from './file-end.js';

afterAll(runFileEnd);
