#!/usr/bin/env bash
# Measures `foresight get` through `foresight proxy` at 1 Gbit/s for one-way delays from 0.05 ms to
# 25 ms, with --alpha auto and --alpha 1, then random reads of 4 KiB to 64 MiB (bytes moved against
# bytes asked). Prints two tables. Needs python3 for the JSON; takes a few minutes.
#
#   cargo build --release && examples/net-delay.sh [FILE_MIB]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FORESIGHT:-./target/release/foresight}
file_mib=${1:-512}
link_mib_s=119.2093   # 1 Gbit/s of payload in MiB/s
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
head -c $((file_mib << 20)) /dev/urandom > "$dir/data.bin"
"$bin" serve --root "$dir" --addr 127.0.0.1:18480 2> "$dir/serve.log" &
pids+=($!)
for _ in $(seq 100); do grep -q http:// "$dir/serve.log" 2>/dev/null && break; sleep 0.1; done
head -1 "$dir/serve.log"

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(*[d[k] for k in sys.argv[1:]])" "$@"; }

echo "one-way delay | alpha | MiB/s | % of 1 Gbit/s | alpha (end/max) | rtt ms"
port=18481
for delay in 0.05ms 0.5ms 1ms 5ms 10ms 25ms; do
  "$bin" proxy --listen 127.0.0.1:$port --upstream 127.0.0.1:18480 --delay $delay --bandwidth 1Gbit 2>/dev/null &
  proxy=$!
  pids+=($proxy)
  sleep 0.3
  for alpha in auto 1; do
    read -r mib alpha_end alpha_max rtt < <("$bin" get http://127.0.0.1:$port/data.bin --alpha $alpha --json \
      | field mib_s alpha alpha_max rtt_ms)
    python3 -c "print('$delay | $alpha | %.1f | %.1f%% | $alpha_end/$alpha_max | %.2f' % ($mib, 100*$mib/$link_mib_s, $rtt))"
  done
  kill $proxy
  port=$((port + 1))
done

echo
echo "random read | reads | asked | transferred | ratio | bound 1.1 x asked + reads x unit"
for size in 4KiB 64KiB 1MiB 4MiB 16MiB 64MiB; do
  reads=64
  case $size in 16MiB) reads=16 ;; 64MiB) reads=4 ;; esac
  read -r asked moved unit < <("$bin" get http://127.0.0.1:18480/data.bin --random $size --reads $reads --json \
    | field bytes transferred_bytes unit_bytes)
  python3 -c "a,m,u=$asked,$moved,$unit; b=1.1*a+$reads*u; print('$size | $reads | %d | %d | %.3f | %d %s' % (a, m, m/a, b, 'ok' if m <= b else 'OVER'))"
done
