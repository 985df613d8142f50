/**
 * A tiny forward proxy for the proxy tests, run as its own process: `node forward-proxy.mjs [mode]`.
 * It forwards absolute-URI requests (`GET http://host/path`) and tunnels CONNECT, and prints one JSON
 * line per thing it proxied ({"kind":"connect","target":"127.0.0.1:4000"} or {"kind":"forward",...,
 * "authorization":true}); its first line is {"port":N}. Each line read on stdin is answered with
 * {"synced":true}, after every line about a request it had answered by then. Mode `refuse` answers every request and
 * CONNECT with 500, mode `auth` with 407 (Proxy Authentication Required). Loopback only: it refuses any target off 127.0.0.1/localhost.
 *
 * The client never sends a loopback target through a proxy, so the tests name the simulator with a
 * made-up host (argv[3], PROXIED_HOST in proxy.ts) that only this proxy knows: it stands for
 * 127.0.0.1, and no DNS is ever asked about it. `target` is where the proxy connects (the made-up
 * name as 127.0.0.1), `asked` what the client asked for.
 */
import { createServer, request } from 'node:http';
import { connect } from 'node:net';

const mode = process.argv[2] ?? 'ok';
const alias = process.argv[3];
/** The made-up name as the loopback address it stands for; any other host as it is. */
const resolveHost = (host) => (alias && host.toLowerCase() === alias ? '127.0.0.1' : host);
const report = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const loopback = (host) => host === '127.0.0.1' || host === 'localhost' || host === '[::1]' || host === '::1';

const server = createServer((req, res) => {
  let target;
  try {
    target = new URL(req.url ?? '');
  } catch {
    res.writeHead(400).end('absolute URI expected');
    return;
  }
  const asked = target.host;
  target.hostname = resolveHost(target.hostname);
  report({ kind: 'forward', target: target.host, asked, path: target.pathname, authorization: req.headers.authorization !== undefined });
  if (mode === 'refuse' || !loopback(target.hostname)) {
    res.writeHead(500).end('proxy refuses');
    return;
  }
  const headers = { ...req.headers };
  delete headers['proxy-connection'];
  const upstream = request(
    { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  upstream.on('error', () => res.writeHead(502).end('upstream failed'));
  req.pipe(upstream);
});

server.on('connect', (req, socket, head) => {
  const [asked = '', port = ''] = (req.url ?? '').split(/:(?=\d+$)/);
  const host = resolveHost(asked);
  report({ kind: 'connect', target: `${host}:${port}`, asked: req.url, authorization: req.headers.authorization !== undefined });
  if (mode === 'auth') {
    socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="test"\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  if (mode === 'refuse' || !loopback(host)) {
    socket.end('HTTP/1.1 500 Proxy Refuses\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  const upstream = connect(Number(port), host, () => {
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', () => socket.destroy());
  socket.on('error', () => upstream.destroy());
});

server.listen(0, '127.0.0.1', () => report({ port: server.address().port }));
process.stdin.on('data', (d) => {
  for (const c of d.toString()) if (c === '\n') report({ synced: true });
});
process.on('SIGTERM', () => process.exit(0));
