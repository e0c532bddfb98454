// One chat completion through the official OpenAI SDK, the way an
// application makes it, and one JSON line of what the application sees
// when it fails: the SDK's error class, status and message, the error
// body's type and code, and the answer's Content-Type and Retry-After.
// No retries, so that the line is about this one answer. Used by
// tests/e2e/openai-client.bats.
//   [DBK_MODEL=NAME] node openai-error.mjs BASE_URL [HEADER VALUE]
// (the model asked for: stub-model unless DBK_MODEL names another)
import OpenAI from 'openai';

const [baseURL, header, value] = process.argv.slice(2);
const client = new OpenAI({
  baseURL, apiKey: 'unused', maxRetries: 0, timeout: 30000,
  defaultHeaders: header ? { [header]: value } : {},
});

try {
  await client.chat.completions.create({
    model: process.env.DBK_MODEL || 'stub-model', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4,
  });
  console.log(JSON.stringify({ ok: true }));
} catch (e) {
  console.log(JSON.stringify({
    ok: false, class: e.constructor.name, status: e.status, message: e.message,
    type: e.type, code: e.code,
    content_type: e.headers?.get('content-type') ?? null,
    retry_after: e.headers?.get('retry-after') ?? null,
  }));
}
