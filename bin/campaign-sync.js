#!/usr/bin/env node
// Tiny launcher: everything lives in dist/ (built by `npm install` through the prepare script).
import { main } from '../dist/main.js';

main(process.argv);
