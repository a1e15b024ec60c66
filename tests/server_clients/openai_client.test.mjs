// Reprise's server through the official `openai` npm client: chat, completions, streaming,
// documents, usage fields, errors; then a SIGTERM that drains and exits 0.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startServer } from "./reprise_server.mjs";

let server;
let client;

before(async () => {
  server = await startServer(["--api-key", "test-key:tests"]);
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: "test-key", maxRetries: 0 });
});

after(async () => {
  if (!server) return;
  const { code } = await server.stop();
  assert.equal(code, 0, "exit code after SIGTERM:\n" + server.log());
  assert.match(server.log(), /SIGTERM: draining/);
  assert.match(server.log(), /reprise serve: stopped/);
});

test("lists the model", async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, "stories");
  assert.equal(models.data[0].owned_by, "reprise");
});

test("chat completion with usage and the reprise object", async () => {
  const reply = await client.chat.completions.create({
    model: "stories", messages: [{ role: "user", content: "Tell me a story about a cat." }],
    max_tokens: 16, temperature: 0 });
  assert.equal(reply.object, "chat.completion");
  assert.equal(reply.choices[0].message.role, "assistant");
  assert.ok(reply.choices[0].message.content.length > 0);
  assert.equal(reply.choices[0].finish_reason, "length");
  assert.equal(reply.usage.completion_tokens, 16);
  assert.equal(reply.usage.total_tokens, reply.usage.prompt_tokens + 16);
  assert.equal(typeof reply.usage.prompt_tokens_details.cached_tokens, "number");
  const r = reply.reprise;
  assert.equal(r.namespace, "tests");
  assert.equal(r.tokens_prefix + r.tokens_reused + r.tokens_recomputed + r.tokens_new,
               reply.usage.prompt_tokens);
});

test("streamed chat equals the whole reply, with usage last", async () => {
  const request = { model: "stories", max_tokens: 20, temperature: 0,
                    messages: [{ role: "user", content: "Once upon a time" }] };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({
    ...request, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? "";
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 20);
});

test("completions, streamed and not", async () => {
  const whole = await client.completions.create({
    model: "stories", prompt: "The little dog", max_tokens: 12, temperature: 0 });
  assert.equal(whole.object, "text_completion");
  assert.equal(whole.usage.completion_tokens, 12);
  const stream = await client.completions.create({
    model: "stories", prompt: "The little dog", max_tokens: 12, temperature: 0, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.equal(text, whole.choices[0].text);
});

test("documents are reused from the cache in a new order", async () => {
  const docs = [
    { id: "lily", text: "Lily was a little girl who loved to play in the park with her red ball. " +
                        "Every morning she ran to the big tree and counted the birds." },
    { id: "max", text: "Max was a brown dog with a long tail. He liked to dig holes in the " +
                       "garden and hide his bones under the roses." },
    { id: "sun", text: "The sun was warm and the sky was blue. The children sang songs and " +
                       "ate apples under the shade of the old oak." },
  ];
  const ask = (documents, question) => client.chat.completions.create({
    model: "stories", max_tokens: 4, temperature: 0, documents,
    messages: [{ role: "user", content: question }] });
  const first = await ask(docs, "Who is Max?");
  assert.ok(first.usage.prompt_tokens > 60);
  const second = await ask([docs[2], docs[0], docs[1]], "What did Lily love?");
  const r = second.reprise;
  assert.ok(r.tokens_reused + r.tokens_recomputed > 40,
            "documents in a new order were not reused: " + JSON.stringify(r));
  assert.equal(second.usage.prompt_tokens_details.cached_tokens, r.tokens_prefix + r.tokens_reused);
});

test("errors come back as the client's typed errors", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found");
  await assert.rejects(
    client.chat.completions.create({ model: "stories", max_tokens: -1,
                                     messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.BadRequestError && /max_tokens/.test(e.message));
  await assert.rejects(
    client.chat.completions.create({ model: "stories", messages: [] }),
    (e) => e instanceof OpenAI.BadRequestError);
  const stranger = new OpenAI({ baseURL: server.url + "/v1", apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(
    stranger.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof OpenAI.AuthenticationError);
});
