#!/usr/bin/env python3
"""Measures the agent-facing API features of a running `reprise serve` and prints figures for
docs/benchmarks.md (standard library only).

  agent_api_probe.py constrained --port P [--rounds 5] [--max-tokens 64] [--temperature 1]
      Decode tokens/s of free text against a response_format json_schema reply (the engine's
      own decode_tokens_per_second, from the `reprise` object), alternating the two request by
      request so that a load that comes and goes weighs on both alike; and whether every
      constrained reply parses and has the schema's shape.
  agent_api_probe.py choices --port P [--rounds 5] [--n 4] [--max-tokens 32]
      n choices in one request (one prefill) against n separate requests sent at once: the
      client's time to the first streamed token and to the last byte, and the prompt tokens
      the engine computed (reprise.tokens_new: once for n choices, n times for n requests).
      Run the server with --reuse none (or a fresh cache) and --sessions >= n.
"""
import argparse
import json
import statistics
import threading
import time
import urllib.request

PROMPT = ("You are a careful assistant. Summarise the following note in a few words and list "
          "the people it names. Note: " + "Alice met Bob at the station; they talked about the "
          "weather, the trains and the book Carol lent them last spring. " * 12)

SCHEMA = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "maxLength": 80},
        "people": {"type": "array", "items": {"type": "string", "maxLength": 24},
                   "minItems": 1, "maxItems": 6},
        "mood": {"enum": ["happy", "neutral", "sad"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["summary", "people", "mood", "confidence"],
    "additionalProperties": False,
}


def post(port, body, stream=False):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as response:
        if not stream:
            return json.loads(response.read()), None, time.monotonic() - start
        first = None
        events = []
        for line in response:
            line = line.decode().strip()
            if not line.startswith("data: "):
                continue
            if first is None:
                first = time.monotonic() - start
            payload = line[len("data: "):]
            if payload != "[DONE]":
                events.append(json.loads(payload))
        return events, first, time.monotonic() - start


TEMPERATURE = [1.0]


def chat(prompt, max_tokens, **extra):
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": TEMPERATURE[0]}
    body.update(extra)
    return body


def shape_ok(text):
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (isinstance(value, dict) and set(value) == set(SCHEMA["properties"]) and
            isinstance(value["people"], list) and 1 <= len(value["people"]) <= 6 and
            value["mood"] in ("happy", "neutral", "sad") and 0 <= value["confidence"] <= 1)


def constrained(args):
    free, schema, valid = [], [], 0
    for round_ in range(args.rounds):
        order = ["free", "schema"] if round_ % 2 == 0 else ["schema", "free"]
        for kind in order:
            extra = {"seed": round_}
            max_tokens = args.max_tokens
            if kind == "schema":
                extra["response_format"] = {"type": "json_schema",
                                            "json_schema": {"name": "note", "schema": SCHEMA,
                                                            "strict": True}}
                max_tokens *= 4  # room for the whole document
            body, _, _ = post(args.port, chat(PROMPT, max_tokens, **extra))
            rate = body["reprise"]["decode_tokens_per_second"]
            tokens = body["usage"]["completion_tokens"]
            if kind == "schema":
                schema.append(rate)
                valid += shape_ok(body["choices"][0]["message"]["content"])
            else:
                free.append(rate)
            print(f"round {round_} {kind:6s}: {tokens:4d} tokens, {rate:7.2f} tok/s")
    print(f"free text  : {statistics.mean(free):7.2f} tok/s (mean of {len(free)})")
    print(f"json_schema: {statistics.mean(schema):7.2f} tok/s (mean of {len(schema)}), "
          f"{statistics.mean(schema) / statistics.mean(free):.3f}x; {valid}/{len(schema)} valid")


def choices(args):
    one_first, one_total, many_first, many_total = [], [], [], []
    one_new, many_new = [], []
    for round_ in range(args.rounds):
        prompt = f"[{round_}] " + PROMPT  # a prompt of its own each round: nothing cached
        body = chat(prompt, args.max_tokens, n=args.n, stream=True,
                    stream_options={"include_usage": True})
        events, first, total = post(args.port, body, stream=True)
        one_first.append(first)
        one_total.append(total)
        one_new.append(events[-1]["reprise"]["tokens_new"])
        results = [None] * args.n

        def one(i):
            single = chat(f"[{round_}.{i}] " + PROMPT, args.max_tokens, stream=True,
                          stream_options={"include_usage": True})
            results[i] = post(args.port, single, stream=True)

        start = time.monotonic()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(args.n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        many_total.append(time.monotonic() - start)
        many_first.append(statistics.mean(r[1] for r in results))
        many_new.append(sum(r[0][-1]["reprise"]["tokens_new"] for r in results))
        print(f"round {round_}: n={args.n} first {first * 1000:7.1f} ms, all {total * 1000:7.1f} "
              f"ms, prompt tokens computed {one_new[-1]}; {args.n} requests first (mean) "
              f"{many_first[-1] * 1000:7.1f} ms, all {many_total[-1] * 1000:7.1f} ms, computed "
              f"{many_new[-1]}")
    print(f"n={args.n} in one request : first token {statistics.median(one_first) * 1000:.1f} ms, "
          f"all {statistics.median(one_total) * 1000:.1f} ms (medians)")
    print(f"{args.n} separate requests: first token {statistics.median(many_first) * 1000:.1f} ms "
          f"(mean over the requests), all {statistics.median(many_total) * 1000:.1f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["constrained", "choices"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="0 = greedy: the sampler's cost out of the comparison")
    args = parser.parse_args()
    TEMPERATURE[0] = args.temperature
    constrained(args) if args.mode == "constrained" else choices(args)


if __name__ == "__main__":
    main()
