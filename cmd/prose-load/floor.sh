#!/usr/bin/env bash
# Issue 13's SQLite runs/s, base against new, and the floor of the load
# generator + net/http + kernel (prose-bare answering prose-load's calls
# with the bodies prose serve gave, no database, no engine), alternated,
# a fresh data directory each (BENCHMARKS.md, "SQLite runs/s: last pass and
# the ceiling (branch perf-sqlite-floor)").
# usage: BENCH_DIR=dir [ROUNDS=3] [RUNS=40000] [ORDER="base new bare"] floor.sh
#   BENCH_DIR holds prose-base, prose-new, prose-load, prose-bare.
# Prints runs/s, the server's and prose-load's CPU per run (user+system).
set -uo pipefail
cd "${BENCH_DIR:?}"
PORT=18713
RUNS=${RUNS:-40000}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
tck=$(getconf CLK_TCK)
start_prose() { # $1 tag
  rm -rf d; ./prose-$1 init --json --data d > init.json 2>/dev/null
  ./prose-$1 serve --data d --addr 127.0.0.1:$PORT --log-level error ${SERVE_FLAGS:-} > serve.log 2>&1 &
  pid=$!
}
start_bare() {
  # The bodies prose serve answers to prose-load's create and invoke.
  start_prose new
  for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.2; done
  local key ws
  key=$(jq -r .api_key init.json); ws=$(jq -r .workspace init.json)
  local src; src=$(./prose-load --print-automation)
  jq -n --arg s "$src" '{display_name:"load", english_code:$s}' |
    curl -s -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -d @- http://127.0.0.1:$PORT/api/v1/$ws/automations > automation.json
  curl -s -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"stage":"AUTOMATION_STAGE_DRAFT","request_id":"bare-1"}' http://127.0.0.1:$PORT/api/v1/$(jq -r .name automation.json):invoke > invoke.json
  curl -s -H "Authorization: Bearer $key" http://127.0.0.1:$PORT/api/v1/$ws > ws.json
  kill $pid; wait $pid 2>/dev/null
  ./prose-bare --workspace ws.json --key "$key" --http 127.0.0.1:$PORT --automation automation.json --invoke invoke.json &
  pid=$!
}
one() { # $1 base|new|bare
  if [ "$1" = bare ]; then start_bare; else start_prose "$1"; fi
  for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.2; done
  local c0 c1 out lc
  c0=$(cpu $pid)
  out=$( { /usr/bin/time -f "LOADCPU %U %S" ./prose-load --addr 127.0.0.1:$PORT --init init.json --runs "$RUNS" --concurrency 32; } 2>&1)
  c1=$(cpu $pid)
  kill $pid; wait $pid 2>/dev/null
  lc=$(echo "$out" | awk '/^LOADCPU/ {printf "%d", ($2+$3)*1000000/'"$RUNS"'}')
  local rps
  if [ "$1" = bare ]; then rps=$(echo "$out" | awk '/^invoke:/ {print $2}'); else rps=$(echo "$out" | awk '/^completed:/ {print $2}'); fi
  echo "$1: $rps runs/s | server $(( (c1-c0)*1000000/tck/RUNS )) µs/run | prose-load $lc µs/run | load $(cut -d' ' -f1 /proc/loadavg)"
  [ "$1" = bare ] || echo "$out" | grep -E '^(runs|latency)' | sed 's/^/    /'
}
for r in $(seq "${ROUNDS:-3}"); do for B in ${ORDER:-base new bare}; do one "$B"; done; done
