# Day-to-day shortcuts; `scripts/test` is what CI runs.

default:
    @just --list

# format the workspace
fmt:
    cargo fmt --all

# clippy, warnings as errors
lint:
    cargo clippy --workspace --all-targets -- -D warnings

# everything CI checks (installs nats-server into .tools/)
test *ARGS:
    scripts/test {{ARGS}}

# all benchmarks (see BENCHMARKS.md); the Act bench also runs the service
# binaries as separate processes, so they are built first
bench:
    cargo build --release --bins
    cargo bench --workspace

# the dice engine against Python's d20 and Node's rpg-dice-roller, one run (BENCHMARKS.md)
bench-dice:
    scripts/bench-dice-peers
