#!/usr/bin/env python3
"""Probes a running `reprise serve` the way a hostile or careless client would, and prints
figures for docs/reliability.md (standard library only; loopback or any address).

  serve_probe.py slow  --port P [--clients 80] [--seconds 20] [--interval 4]
      N connections that send one header line every `interval` seconds and never finish their
      head, while /health is asked every half second on a fresh connection: its latency
      (median, worst) and how many asks got no answer within 10 s.
  serve_probe.py gzip  --port P --pid PID [--inflated-mb 200]
      A chat request whose body is gzip: a prompt of `inflated-mb` MB in a few hundred KB on
      the wire. Prints the answer's status, the time it took and the server's peak RSS
      (VmHWM of /proc/PID/status) before and after.
  serve_probe.py idle  --port P --pid PID [--connections 1000]
      Opens N connections, each asking /health once and then staying open and idle; prints
      the server's RSS before and after, and the difference per connection.
"""
import argparse
import gzip
import json
import socket
import statistics
import sys
import threading
import time


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def ask(port, request, timeout):
    """Sends `request` on a new connection; returns (status or None, seconds)."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request)
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            status = int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.") else None
    except OSError:
        status = None
    return status, time.monotonic() - start


HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def slow(args):
    conns = []
    for _ in range(args.clients):
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=5)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
            conns.append(s)
        except OSError:
            pass
    stop = threading.Event()

    def trickle():
        line = 0
        while not stop.wait(args.interval):
            for s in conns:
                try:
                    s.sendall(b"X-Slow-%d: 1\r\n" % line)
                except OSError:
                    pass
            line += 1

    threading.Thread(target=trickle, daemon=True).start()
    latencies, failures = [], 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        status, seconds = ask(args.port, HEALTH, 10)
        if status == 200:
            latencies.append(seconds * 1000)
        else:
            failures += 1
        time.sleep(0.5)
    stop.set()
    open_at_end = 0
    for s in conns:
        try:
            s.setblocking(False)
            open_at_end += 0 if s.recv(1) == b"" else 1
        except BlockingIOError:
            open_at_end += 1
        except OSError:
            pass
        s.close()
    print(json.dumps({
        "slow_clients": len(conns), "seconds": args.seconds, "health_asks": len(latencies) + failures,
        "health_failed_10s": failures,
        "health_ms_median": round(statistics.median(latencies), 1) if latencies else None,
        "health_ms_worst": round(max(latencies), 1) if latencies else None,
        "slow_connections_still_open": open_at_end}))


def gzip_bomb(args):
    prompt = b"a" * (args.inflated_mb * 1000 * 1000)
    body = gzip.compress(b'{"messages":[{"role":"user","content":"' + prompt + b'"}]}', 9)
    del prompt
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Encoding: gzip\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
               % len(body)) + body
    before = rss_kb(args.pid, "VmHWM")
    status, seconds = ask(args.port, request, 600)
    print(json.dumps({
        "wire_kb": round(len(body) / 1000, 1), "inflated_mb": args.inflated_mb, "status": status,
        "seconds": round(seconds, 2), "peak_rss_mb_before": round(before / 1024, 1),
        "peak_rss_mb_after": round(rss_kb(args.pid, "VmHWM") / 1024, 1)}))


def idle(args):
    before = rss_kb(args.pid, "VmRSS")
    conns, answered = [], 0
    for _ in range(args.connections):
        try:
            s = socket.create_connection(("127.0.0.1", args.port), timeout=10)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(2)
            if s.recv(4096).startswith(b"HTTP/1.1 200"):
                answered += 1
            conns.append(s)
        except OSError:
            pass
    time.sleep(1)
    after = rss_kb(args.pid, "VmRSS")
    print(json.dumps({
        "connections": len(conns), "answered": answered, "rss_mb_before": round(before / 1024, 1),
        "rss_mb_after": round(after / 1024, 1),
        "kb_per_connection": round((after - before) / max(1, len(conns)), 1)}))
    for s in conns:
        s.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="probe", required=True)
    p = sub.add_parser("slow")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--clients", type=int, default=80)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--interval", type=float, default=4)
    p = sub.add_parser("gzip")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--inflated-mb", type=int, default=200)
    p = sub.add_parser("idle")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--connections", type=int, default=1000)
    args = parser.parse_args()
    {"slow": slow, "gzip": gzip_bomb, "idle": idle}[args.probe](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
