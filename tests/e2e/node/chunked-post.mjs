// POSTs a file as a chunked body, CHUNK bytes per chunk, the way a
// streaming client uploads (curl sends 64 KB chunks; clients that write
// as they serialise send far smaller ones), and prints one JSON line:
// the status, the headers (names in lower case) and the answer's body. Node's own
// http module: each write() of a request without Content-Length is one
// chunk. Used by tests/e2e/policy.bats and routing.bats.
//   node chunked-post.mjs URL FILE CHUNK
import { readFileSync } from 'node:fs';
import { request } from 'node:http';

const [url, file, chunkArg] = process.argv.slice(2);
const chunk = Number(chunkArg);
if (!url || !file || !Number.isInteger(chunk) || chunk <= 0) {
  console.error('usage: node chunked-post.mjs URL FILE CHUNK');
  process.exit(2);
}
const body = readFileSync(file);
const req = request(url, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, timeout: 30000,
}, (res) => {
  const parts = [];
  res.on('data', (d) => parts.push(d));
  res.on('end', () => {
    console.log(JSON.stringify({
      status: res.statusCode, headers: res.headers,
      body: Buffer.concat(parts).toString(),
    }));
  });
});
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (e) => { console.error(e.message); process.exit(1); });
for (let at = 0; at < body.length; at += chunk)
  req.write(body.subarray(at, at + chunk));
req.end();
