#!/usr/bin/env python3
"""The long-document reorder trace of docs/benchmarks.md ("A chat whose window moves"): moved
documents must recompute exactly as with `--adaptive-stable 0` (standard library only).

  reorder_trace.py --url http://127.0.0.1:8181 [--chars 1500] [--data ../shared/data]

Eight LoCoMo session transcripts of the first conversation (each the session's first turns,
"<speaker>: <text>" a line, up to `chars` characters) are the documents; eight requests to
/v1/chat/completions each send 4 of them, drawn with a fixed seed, as the `documents` field
right after the system message, and a question. Prints each request's counts from the
response's `reprise` object (prompt, prefix, reused, recomputed, stable, new) and the totals.
Run it against a fresh `reprise serve` with the default and with `--adaptive-stable 0`, and
compare the two outputs.
"""
import argparse
import json
import os
import random
import urllib.request

KEYS = ("prompt", "prefix", "reused", "recomputed", "stable", "new")


def documents(data, chars):
    path = os.path.join(data, "workloads", "locomo", "locomo10.json")
    with open(path) as f:
        conversation = json.load(f)[0]["conversation"]
    out = []
    for s in range(1, 9):
        text = ""
        for turn in conversation[f"session_{s}"]:
            line = f"{turn['speaker']}: {turn['text']}\n"
            if len(text) + len(line) > chars:
                break
            text += line
        out.append({"id": f"session-{s}", "text": text})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--data", default=os.path.join("..", "shared", "data"))
    args = parser.parse_args()
    docs = documents(args.data, args.chars)
    rng = random.Random(42)
    total = dict.fromkeys(KEYS, 0)
    for q in range(8):
        pick = rng.sample(range(8), 4)
        body = {
            "messages": [
                {"role": "system",
                 "content": "You answer questions about the conversations in the documents."},
                {"role": "user", "content": f"Question {q + 1}: what did they talk about?"},
            ],
            "documents": [docs[i] for i in pick],
            "max_tokens": 1,
            "temperature": 0,
        }
        request = urllib.request.Request(args.url + "/v1/chat/completions",
                                         json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.load(response)
        r = answer["reprise"]
        row = {"prompt": answer["usage"]["prompt_tokens"], "prefix": r["tokens_prefix"],
               "reused": r["tokens_reused"], "recomputed": r["tokens_recomputed"],
               "stable": r.get("tokens_stable", 0), "new": r["tokens_new"]}
        for k in KEYS:
            total[k] += row[k] or 0
        print(q + 1, pick, json.dumps(row))
    print("total", json.dumps(total))


if __name__ == "__main__":
    main()
