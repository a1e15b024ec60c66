#!/usr/bin/env python3
"""Measures the store's remote tier between two `reprise serve` processes (docs/benchmarks.md,
"Sharing KV between servers"); standard library only.

  remote_tier_probe.py --reprise build/src/cli/reprise --model M.gguf [--queries 5]
      [--data data/demo/hotpotqa_demo_30.jsonl] [--threads 2]

Starts a redis-server (loopback, a free port, a temporary folder) and, one after another:
  cold    server B with a fresh store and no remote tier answers the queries;
  A       server A (fresh store, --remote) answers them: it computes the documents and
          writes them back to its flash and to Redis;
  remote  server B (fresh store, --remote) answers the queries with another question line:
          the documents come from Redis;
  flash   server B restarted without --remote answers them with a third question line: the
          documents come from its own flash (where the remote chunks landed).
Each query's documents are its HotpotQA paragraphs (one document each). Prints the median
TTFT (the `reprise.ttft_ms` of each response) and cached share of each phase, A's remote
bytes per chunk sent, and B's remote hits, from /metrics.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port, path="/health", limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"port {port} did not answer {path}")


class Server:
    def __init__(self, args, store, remote=None):
        self.port = free_port()
        self.model = args.model
        command = [args.reprise, "serve", "-m", args.model, "--port", str(self.port),
                   "--store-dir", store, "--threads", str(args.threads),
                   "--context", str(args.context)]
        if remote:
            command += ["--remote", remote, "--remote-timeout-ms", str(args.remote_timeout_ms)]
        self.log = open(store + ".log", "ab")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log)
        wait_http(self.port)

    def ask(self, documents, question):
        body = {"model": os.path.splitext(os.path.basename(self.model))[0],
                "max_tokens": 1, "temperature": 0,
                "messages": [{"role": "user", "content": question}],
                "documents": documents}
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as r:
            return json.load(r)

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line.startswith("reprise_"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)
        self.log.close()


def phase(server, queries, prefix):
    ttft, cached, prompt = [], 0, 0
    for documents, question in queries:
        answer = server.ask(documents, prefix + question)
        ttft.append(answer["reprise"]["ttft_ms"])
        cached += answer["usage"]["prompt_tokens_details"]["cached_tokens"]
        prompt += answer["usage"]["prompt_tokens"]
    return statistics.median(ttft), cached / max(prompt, 1), prompt / len(queries)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reprise", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", default="data/demo/hotpotqa_demo_30.jsonl")
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--remote-timeout-ms", type=int, default=50)
    args = parser.parse_args()
    queries = []
    with open(args.data) as f:
        for line in f:
            record = json.loads(line)
            documents = [{"id": p["title"], "text": " ".join(p["sentences"])}
                         for p in record["paragraphs"]]
            queries.append((documents, record["question"]))
            if len(queries) == args.queries:
                break
    work = tempfile.mkdtemp(prefix="reprise-remote-probe-")
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--dir", work, "--save", "", "--appendonly", "no",
                              "--logfile", work + "/redis.log"])
    remote = f"redis://127.0.0.1:{redis_port}"
    try:
        time.sleep(0.5)
        cold = Server(args, work + "/cold")
        cold_result = phase(cold, queries, "Question: ")
        cold.stop()
        a = Server(args, work + "/a", remote)
        phase(a, queries, "Question: ")
        time.sleep(2)  # the write-back thread sends what it wrote
        a_metrics = a.metrics()
        a.stop()  # flushes: everything is sent
        b = Server(args, work + "/b", remote)
        remote_result = phase(b, queries, "Second question: ")
        b_metrics = b.metrics()
        b.stop()
        b_again = Server(args, work + "/b")
        flash_result = phase(b_again, queries, "Third question: ")
        b_again.stop()
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(work, ignore_errors=True)
    sent = a_metrics.get("reprise_remote_chunks_sent_total", 0)
    written = a_metrics.get('reprise_remote_bytes_total{direction="written"}', 0)
    print(f"model {os.path.basename(args.model)}, {len(queries)} queries, "
          f"{cold_result[2]:.0f} prompt tokens each on average, {args.threads} threads")
    print("| B's documents | median TTFT ms | cached share |")
    print("|---|---|---|")
    for label, result in (("cold (computed)", cold_result), ("from A through Redis", remote_result),
                          ("on its own flash", flash_result)):
        print(f"| {label} | {result[0]:.1f} | {result[1]:.2f} |")
    hits = b_metrics.get('reprise_remote_lookups_total{result="hit"}', 0)
    misses = b_metrics.get('reprise_remote_lookups_total{result="miss"}', 0)
    unavailable = (a_metrics.get("reprise_remote_unavailable_total", 0),
                   b_metrics.get("reprise_remote_unavailable_total", 0))
    bad = b_metrics.get('reprise_remote_lookups_total{result="bad_value"}', 0)
    print(f"A sent {sent:.0f} chunks (at the moment of measuring), "
          f"{written / max(sent, 1) / 1024:.1f} KiB each; B: {hits:.0f} remote hits, "
          f"{misses:.0f} misses, {bad:.0f} bad values; operations that gave up (timeout "
          f"{args.remote_timeout_ms} ms): A {unavailable[0]:.0f}, B {unavailable[1]:.0f}")


if __name__ == "__main__":
    sys.exit(main())
