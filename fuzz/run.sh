#!/usr/bin/env bash
# Runs every fuzz target for MINUTES minutes in total (split evenly), outside CI.
#   fuzz/run.sh 10            # ten minutes over all targets
#   fuzz/run.sh 5 c2s_decode  # five minutes on one target
# Needs cargo-fuzz (`cargo install cargo-fuzz`); on stable Rust it sets RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "$0")"
minutes=${1:-10}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
per=$(( minutes * 60 / ${#targets[@]} ))
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  echo "== $t for ${per}s"
  mkdir -p "corpus/$t"
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$per" -max_len=4096 2>&1 | tail -n 4
done
