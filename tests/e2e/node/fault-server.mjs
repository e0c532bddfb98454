// A vLLM server gone wrong, for tests/e2e/openai-client.bats: it passes
// HAProxy's health check (GET /health) and answers nothing else properly.
//   node fault-server.mjs hang|garbage
//     hang     reads a request and never answers it (HAProxy's 504)
//     garbage  answers a request with bytes that are not HTTP (its 502)
// Listens on a free loopback port and prints "listening on
// 127.0.0.1:PORT" once ready; SIGTERM stops it.
import http from 'node:http';

const mode = process.argv[2];
if (mode !== 'hang' && mode !== 'garbage') {
  console.error('usage: node fault-server.mjs hang|garbage');
  process.exit(2);
}
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') {
    res.end();
    return;
  }
  req.resume();
  if (mode === 'garbage') req.socket.end('this is not HTTP\r\n\r\n');
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
