// Drives one vLLM-compatible server with the official OpenAI SDK, the way
// an application would, and prints one JSON line per call: what the SDK
// made of the answer (its error class, status and message, or the text it
// assembled from the stream). Used by tests/e2e/openai-client.bats.
//
//   node openai-client.mjs BASE_URL MODEL LONG_PROMPT_BYTES
import OpenAI from 'openai';

const [baseURL, model, longBytes] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 30000 });

function report(call, fn) {
  return fn().then(
    (r) => console.log(JSON.stringify({ call, ok: true, ...r })),
    (e) => console.log(JSON.stringify({
      call, ok: false, class: e.constructor.name, status: e.status,
      message: e.message, type: e.type, code: e.code, param: e.param,
    })),
  );
}

await report('too-long', async () => {
  const r = await client.completions.create({
    model, prompt: 'a'.repeat(Number(longBytes)), max_tokens: 16,
  });
  return { text: r.choices[0].text };
});

await report('unknown-model', async () => {
  const r = await client.chat.completions.create({
    model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2,
  });
  return { text: r.choices[0].message.content };
});

await report('stream', async () => {
  const s = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of s) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, completion_tokens: usage && usage.completion_tokens };
});
