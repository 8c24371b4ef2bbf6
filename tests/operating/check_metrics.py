"""Checks each service's /metrics after `battlelog demo` against what the demo did.

The expected figures never come from the services' own counters: they are
counted from the demo's printed output (one `[#N]` line per accepted action,
one `[rejected]` line per refused one) and from the battles' exports (one
event per journal append, one `DiceRolled` per roll, one `SeedRevealed` per
reveal), which the auditor checks independently.

Every endpoint's text must parse with Prometheus's own Python parsers: the
text exposition format's (prometheus_client.parser) and, when the endpoint
says it speaks OpenMetrics, the stricter OpenMetrics one.

Usage:
  check_metrics.py --demo-output demo.out --exports DIR name=URL...
where each name is a service (resolver, roller, journal, web, webhooks) and
URL its /metrics. Prints one line per check; exits 1 on the first failure.
"""

import argparse
import collections
import json
import pathlib
import sys
import urllib.request

from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client import parser as text_parser

GRPC_REQUESTS = "battlelog_grpc_server_requests"
GRPC_DURATION = "battlelog_grpc_server_request_duration_seconds"


class Failure(Exception):
    pass


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        if response.status != 200:
            raise Failure(f"{url}: HTTP {response.status}")
        return response.headers.get("Content-Type", ""), response.read().decode("utf-8")


def parse(name, url):
    """Every sample of the endpoint, as (metric name, labels, value), parsed twice."""
    content_type, text = fetch(url)
    try:
        samples = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_parser.text_string_to_metric_families(text)
            for sample in family.samples
        ]
    except Exception as error:  # the parser raises ValueError and friends
        raise Failure(f"{name}: /metrics does not parse as the text format: {error}") from error
    if content_type.startswith("application/openmetrics-text"):
        try:
            strict = [
                (sample.name, dict(sample.labels), sample.value)
                for family in openmetrics_parser.text_string_to_metric_families(text)
                for sample in family.samples
            ]
        except Exception as error:
            raise Failure(f"{name}: /metrics does not parse as OpenMetrics: {error}") from error
        if sorted(map(repr, strict)) != sorted(map(repr, samples)):
            raise Failure(f"{name}: the two parsers read different samples")
    if not samples:
        raise Failure(f"{name}: /metrics has no samples")
    print(f"ok {name}: /metrics parses ({len(samples)} samples, {content_type or 'no content type'})")
    return samples


def value(samples, metric, **labels):
    """The sum of `metric`'s samples whose labels include `labels`."""
    return sum(v for (n, l, v) in samples if n == metric and all(l.get(k) == w for k, w in labels.items()))


def expect(what, got, wanted):
    if got != wanted:
        raise Failure(f"{what}: {got} on /metrics, but the demo did {wanted}")
    print(f"ok {what}: {got}")


def demo_counts(demo_output):
    accepted = rejected = 0
    for line in pathlib.Path(demo_output).read_text(encoding="utf-8").splitlines():
        if line.startswith("[#"):
            accepted += 1
        elif line.startswith("[rejected]"):
            rejected += 1
    return accepted, rejected


def export_counts(exports):
    events = collections.Counter()
    battles = 0
    for path in sorted(pathlib.Path(exports).glob("*.jsonl")):
        battles += 1
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                if "event_type" in record:
                    events[record["event_type"]] += 1
    if battles == 0:
        raise Failure(f"no exports in {exports}")
    return battles, events


def main():
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--demo-output", required=True)
    arguments.add_argument("--exports", required=True)
    arguments.add_argument("endpoints", nargs="+", metavar="name=URL")
    args = arguments.parse_args()
    endpoints = dict(pair.split("=", 1) for pair in args.endpoints)
    for required in ("resolver", "roller", "journal"):
        if required not in endpoints:
            raise Failure(f"no /metrics URL for the {required}")

    accepted, rejected = demo_counts(args.demo_output)
    battles, events = export_counts(args.exports)
    if accepted == 0:
        raise Failure("the demo's output shows no accepted action")
    samples = {name: parse(name, url) for name, url in endpoints.items()}

    for name, got in samples.items():
        expect(f"{name}: battlelog_build_info{{service={name}}}", value(got, "battlelog_build_info", service=name), 1)

    resolver = samples["resolver"]
    service = "battlelog.v1.Resolver"
    expect("demo output vs export: accepted actions", events["ActionResolved"], accepted)
    expect("resolver: Act answered OK", value(resolver, GRPC_REQUESTS + "_total", service=service, method="Act", code="OK"), accepted)
    all_acts = value(resolver, GRPC_REQUESTS + "_total", service=service, method="Act")
    expect("resolver: Act refused (any code)", all_acts - accepted, rejected)
    expect("resolver: Act latencies observed", value(resolver, GRPC_DURATION + "_count", service=service, method="Act"), all_acts)
    expect("resolver: OpenBattle answered OK", value(resolver, GRPC_REQUESTS + "_total", service=service, method="OpenBattle", code="OK"), battles)
    expect("resolver: Close answered OK", value(resolver, GRPC_REQUESTS + "_total", service=service, method="Close", code="OK"), battles)

    roller = samples["roller"]
    expect("roller: rolls", value(roller, "battlelog_roller_rolls_total"), events["DiceRolled"])
    expect("roller: reveals", value(roller, "battlelog_roller_reveals_total"), events["SeedRevealed"])

    journal = samples["journal"]
    expect("journal: events appended", value(journal, "battlelog_journal_events_appended_total"), sum(events.values()))
    failures = value(journal, GRPC_REQUESTS + "_total", service="battlelog.v1.Journal") - value(
        journal, GRPC_REQUESTS + "_total", service="battlelog.v1.Journal", code="OK"
    )
    expect("journal: requests not OK", failures, 0)


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        print(f"FAIL {failure}")
        sys.exit(1)
