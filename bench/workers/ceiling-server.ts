/**
 * The LIST ceiling: a trivial node:http server answering every request with one prebuilt Buffer
 * (the proxy's own LIST bytes), i.e. the physical limit of serving those bytes over loopback on
 * this machine.  node bench/workers/ceiling-server.ts <body-file>  → prints its URL, serves until killed.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const body = readFileSync(process.argv[2] ?? '');
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}\n`);
});
