// A benchmark server: the simulator with no rate limit and its rendered pages cached, in its own
// process so its CPU is not counted against the client. Prints its URL on stdout, then serves
// until killed. Options as JSON in argv[2].
import { startSimulator } from '../dist/simulator/server.js';

const options = JSON.parse(process.argv[2] ?? '{}');
const sim = await startSimulator({ ...options, cachePages: options.cachePages ?? true, rateLimit: options.rateLimit ?? undefined });
process.stdout.write(`${JSON.stringify({ url: sim.url, apiKey: sim.apiKey })}\n`);
process.on('SIGTERM', async () => {
  await sim.close();
  process.exit(0);
});
