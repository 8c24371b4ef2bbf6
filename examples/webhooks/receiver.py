#!/usr/bin/env python3
"""A battlelog webhook receiver in Python's standard library alone.

It checks each delivery the Standard Webhooks way (standardwebhooks.com):
the secret is `whsec_<base64 key>`, and `webhook-signature` holds one or
more `v1,<base64 HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>`,
space-separated. A delivery older or newer than five minutes is refused
(a replayed capture), and one whose `webhook-id` was seen before is answered
200 without being processed again: battlelog-webhooks retries until it gets
a 2xx, so the same event can arrive more than once.

Each event accepted is printed as one JSON line on stdout (tenant, battle,
version, type, webhook id); the first line is `listening on HOST:PORT`.

    python3 receiver.py --port 8000 --secret-file data/webhooks/secret
    WEBHOOK_SECRET=whsec_... python3 receiver.py --port 8000

(`battlelog up --webhook http://127.0.0.1:8000/` writes its secret to
`<data-dir>/webhooks/secret`.) The seen ids are kept in memory here; a real
forum keeps them in its database, with the event, in one transaction.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 5 * 60
MAX_BODY_BYTES = 4 * 1024 * 1024


def load_secret(args):
    if args.secret_file:
        with open(args.secret_file, encoding="utf-8") as f:
            return f.read().strip()
    return os.environ["WEBHOOK_SECRET"].strip()


def key_of(secret):
    if not secret.startswith("whsec_"):
        raise ValueError("the secret must start with whsec_")
    return base64.b64decode(secret[len("whsec_"):])


def signature_valid(key, webhook_id, timestamp, body, header):
    signed = webhook_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for candidate in header.split(" "):
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


class Receiver(BaseHTTPRequestHandler):
    secret_source = None
    key = None
    seen = set()
    lock = threading.Lock()

    def answer(self, status, text):
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            return self.answer(413, "too large")
        body = self.rfile.read(length)
        webhook_id = self.headers.get("webhook-id", "")
        timestamp = self.headers.get("webhook-timestamp", "")
        signature = self.headers.get("webhook-signature", "")
        if not (webhook_id and timestamp.isdigit() and signature):
            return self.answer(400, "missing webhook headers")
        if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
            return self.answer(400, "timestamp outside the tolerance")
        with self.lock:
            # Read on first use: the receiver may start before
            # `battlelog up --webhook` has written its secret.
            if Receiver.key is None:
                Receiver.key = key_of(load_secret(Receiver.secret_source))
        if not signature_valid(Receiver.key, webhook_id, timestamp, body, signature):
            return self.answer(401, "bad signature")
        with self.lock:
            if webhook_id in self.seen:
                return self.answer(200, "already processed")
            self.seen.add(webhook_id)
            event = json.loads(body)
            data = event["data"]
            line = {
                "webhook_id": webhook_id,
                "tenant": data["tenant"],
                "battle_id": data["battle_id"],
                "version": data["version"],
                "event_type": data["event_type"],
            }
            print(json.dumps(line), flush=True)
        return self.answer(200, "ok")

    def log_message(self, format, *args):
        # Requests are not logged: stdout carries the events only.
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--secret-file")
    args = parser.parse_args()
    if not (args.secret_file or os.environ.get("WEBHOOK_SECRET", "").strip()):
        sys.exit("receiver.py: give --secret-file or WEBHOOK_SECRET")
    Receiver.secret_source = args
    server = ThreadingHTTPServer((args.host, args.port), Receiver)
    host, port = server.server_address[:2]
    print(f"listening on {host}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
