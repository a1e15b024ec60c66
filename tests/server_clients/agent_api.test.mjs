// The agent-facing features of `reprise serve` through the official `openai` npm client:
// structured output (response_format json_schema, the whole reply and the client's streaming
// helper) checked with ajv, log-probabilities, and n choices from one prefill.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Ajv from "ajv";
import { startServer } from "./reprise_server.mjs";

let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: "none", maxRetries: 0 });
});

after(async () => {
  if (server) await server.stop();
});

const schema = {
  type: "object",
  properties: {
    title: { type: "string", maxLength: 20 },
    year: { type: "integer", minimum: 1900, maximum: 2100 },
    tags: { type: "array", items: { enum: ["cat", "dog", "tree", "ball"] }, minItems: 1, maxItems: 3 },
    sequel: { anyOf: [{ type: "null" }, { $ref: "#/$defs/book" }] },
  },
  required: ["title", "year", "tags", "sequel"],
  additionalProperties: false,
  $defs: { book: { type: "object", properties: { title: { type: "string", maxLength: 10 } },
                   required: ["title"], additionalProperties: false } },
};
const responseFormat = { type: "json_schema", json_schema: { name: "book", schema, strict: true } };
const validate = new Ajv().compile(schema);

test("json_schema replies at temperature 1 validate with ajv, 5 of 5", async () => {
  for (let seed = 1; seed <= 5; seed++) {
    const reply = await client.chat.completions.create({
      model: "stories", messages: [{ role: "user", content: "A book, as JSON." }],
      max_tokens: 400, temperature: 1, seed, response_format: responseFormat });
    assert.equal(reply.choices[0].finish_reason, "stop");
    const value = JSON.parse(reply.choices[0].message.content);
    assert.ok(validate(value), JSON.stringify(validate.errors) + " " + JSON.stringify(value));
  }
});

test("the streaming helper assembles a valid reply", async () => {
  const stream = client.beta.chat.completions.stream({
    model: "stories", messages: [{ role: "user", content: "A book." }],
    max_tokens: 400, temperature: 1, seed: 11, response_format: responseFormat });
  const final = await stream.finalChatCompletion();
  const value = JSON.parse(final.choices[0].message.content);
  assert.ok(validate(value), JSON.stringify(validate.errors));
});

test("a schema outside the subset is a 400 naming the keyword", async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: "stories", messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_schema", json_schema: { name: "p",
        schema: { type: "string", pattern: "^a" } } } }),
    (error) => error instanceof OpenAI.BadRequestError && /'pattern' is not supported/.test(error.message));
});

test("logprobs with top_logprobs, and n choices from one prefill", async () => {
  const reply = await client.chat.completions.create({
    model: "stories", messages: [{ role: "user", content: "Once upon a time" }],
    max_tokens: 8, temperature: 1, seed: 3, n: 3, logprobs: true, top_logprobs: 2 });
  assert.equal(reply.choices.length, 3);
  assert.equal(reply.reprise.tokens_new + reply.reprise.tokens_prefix + reply.reprise.tokens_reused +
               reply.reprise.tokens_recomputed, reply.usage.prompt_tokens);
  for (const choice of reply.choices) {
    assert.ok(choice.logprobs.content.length > 0);
    for (const entry of choice.logprobs.content) {
      assert.ok(entry.logprob <= 0);
      assert.equal(entry.top_logprobs.length, 2);
    }
  }
  const scored = await client.completions.create({
    model: "stories", prompt: "The little dog ran", max_tokens: 0, echo: true, logprobs: 1 });
  const lp = scored.choices[0].logprobs;
  assert.equal(scored.choices[0].text, "The little dog ran");
  assert.equal(lp.tokens.length, lp.token_logprobs.length);
  assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === "number" && x <= 0));
});

test("the tool-call loop: call, tool message, answer", async () => {
  const tools = [{ type: "function", function: {
    name: "get_weather", description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 20 } },
                  required: ["city"], additionalProperties: false } } }];
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const first = await client.chat.completions.create({
    model: "stories", messages, tools, tool_choice: "required", temperature: 1, seed: 5,
    max_tokens: 120 });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "get_weather");
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args.city, "string");
  messages.push(choice.message);
  messages.push({ role: "tool", tool_call_id: call.id, content: "18 C and sunny" });
  const answer = await client.chat.completions.create({
    model: "stories", messages, tools, max_tokens: 12, temperature: 0 });
  assert.ok(["stop", "length", "tool_calls"].includes(answer.choices[0].finish_reason));
  // The tools are one reusable segment: the second step reuses their KV.
  assert.ok(answer.usage.prompt_tokens_details.cached_tokens > 0);
});
