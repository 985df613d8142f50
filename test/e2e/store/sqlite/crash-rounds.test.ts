import { registerCrashRounds } from '../../../helpers/crash-rounds-sqlite.js';

// CRASH_KILLS sets the number of kill -9 rounds per sink.
registerCrashRounds(Number(process.env.CRASH_KILLS ?? 1));
