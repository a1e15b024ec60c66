// The chat page at / in headless Chromium: type a message, read the streamed reply and its
// reuse line; a second message reuses the first turn as an exact prefix.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";
import { startServer } from "./reprise_server.mjs";

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await puppeteer.launch({
    executablePath: process.env.REPRISE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.log());
  }
});

async function sendAndRead(page, text, count) {
  await page.type("#input", text);
  await page.keyboard.press("Enter");
  // The reply is complete once its reuse line is there.
  await page.waitForFunction(
    (n) => document.querySelectorAll(".message.assistant .reuse").length >= n ||
           document.querySelector(".message.error"),
    { timeout: 60000 }, count);
  const error = await page.$eval(".message.error .content", (e) => e.textContent).catch(() => null);
  assert.equal(error, null);
  return page.$$eval(".message.assistant", (nodes) => {
    const last = nodes[nodes.length - 1];
    return { text: last.querySelector(".content").textContent,
             reuse: last.querySelector(".reuse").textContent };
  });
}

test("a conversation on the chat page shows replies and what was reused", async () => {
  const page = await browser.newPage();
  await page.goto(server.url + "/", { waitUntil: "load" });
  await page.waitForFunction(() => document.getElementById("model").textContent === "stories");
  await page.$eval("#max-tokens", (e) => { e.value = "12"; });

  const first = await sendAndRead(page, "Tell me a story about a bird.", 1);
  assert.ok(first.text.trim().length > 0, "empty reply");
  const line = /^TTFT \d+ ms · prompt KV: (\d+) prefix, (\d+) reused, (\d+) recomputed, (\d+) new · chunks: \d+ from memory, \d+ from flash/;
  const m1 = first.reuse.match(line);
  assert.ok(m1, "reuse line: " + first.reuse);
  assert.ok(Number(m1[4]) > 0, "the first prompt is computed new");

  const second = await sendAndRead(page, "What happened next?", 2);
  assert.ok(second.text.trim().length > 0);
  const m2 = second.reuse.match(line);
  assert.ok(m2, "reuse line: " + second.reuse);
  assert.ok(Number(m2[1]) > 0, "the first turn is reused as a prefix: " + second.reuse);
  const users = await page.$$eval(".message.user .content", (n) => n.map((e) => e.textContent));
  assert.deepEqual(users, ["Tell me a story about a bird.", "What happened next?"]);
});
