"""Server reflection as Python's grpcio-reflection sees it.

grpcio-reflection asks `grpc.reflection.v1alpha.ServerReflection` (not v1).
For each port given (NAME=HOST:PORT), this lists the services the port
serves through that client and checks that they are exactly the port's own
battlelog service, health and reflection (v1 and v1alpha), and that the
battlelog service's methods can be described from reflection alone.
Prints one line per port; exits non-zero on the first mismatch.

    python reflection_check.py --ca-file data/tls/ca.pem \\
        --client-cert data/tls/client.pem --client-key data/tls/client.key \\
        resolver=127.0.0.1:50051 roller=127.0.0.1:50052 journal=127.0.0.1:50053

Reflection needs no token: it describes the API, it calls none of it.
"""

import argparse
import sys

import grpc
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

EXPECTED = {
    "resolver": "battlelog.v1.Resolver",
    "roller": "battlelog.v1.Roller",
    "journal": "battlelog.v1.Journal",
}
COMMON = {
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}


def channel(address, args):
    if not args.ca_file:
        return grpc.insecure_channel(address)
    with open(args.ca_file, "rb") as f:
        ca = f.read()
    key = cert = None
    # The journal and roller of `up --tls` require the client certificate.
    if args.client_cert and args.client_key:
        with open(args.client_key, "rb") as f:
            key = f.read()
        with open(args.client_cert, "rb") as f:
            cert = f.read()
    credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    return grpc.secure_channel(address, credentials)


def check(name, address, args):
    with channel(address, args) as ch:
        grpc.channel_ready_future(ch).result(timeout=10)
        database = ProtoReflectionDescriptorDatabase(ch)
        services = set(database.get_services())
        wanted = COMMON | {EXPECTED[name]}
        if services != wanted:
            raise SystemExit(f"reflection: {name} at {address} lists {sorted(services)}, expected {sorted(wanted)}")
        # The service's full description comes over reflection too.
        pool = DescriptorPool(database)
        methods = [m.name for m in pool.FindServiceByName(EXPECTED[name]).methods]
        if not methods:
            raise SystemExit(f"reflection: {name} at {address} describes {EXPECTED[name]} without methods")
        print(f"reflection: {name} at {address} lists {', '.join(sorted(services))} ({len(methods)} methods)")
        return methods


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ports", nargs="+", help="NAME=HOST:PORT, NAME one of " + ", ".join(EXPECTED))
    parser.add_argument("--ca-file")
    parser.add_argument("--client-cert")
    parser.add_argument("--client-key")
    args = parser.parse_args()
    for port in args.ports:
        name, _, address = port.partition("=")
        if name not in EXPECTED or not address:
            parser.error(f"{port!r} is not NAME=HOST:PORT")
        check(name, address, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
