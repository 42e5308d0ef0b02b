#!/usr/bin/env bash
# The queued-mode sitting (BENCHMARKS.md "Queued mode (branch queued-mode)"): base (main) against
# qm (branch queued-mode), alternated, fresh database each, prose-load --concurrency 32.
# usage: queued-sitting.sh [runs|prefill] ; binaries in $BENCH_DIR: prose-base prose-qm prose-load
#   runs:    for each backend (BACKENDS, default "sqlite pg") and mode (default; --inline-window -1ns),
#            ROUNDS (3) rounds of base then qm, RUNS (20000) runs each.
#   prefill: SQLite; for 4 s prose-base serves with --workers 1 --inline-window -1ns while prose-load
#            invokes (a queue of thousands builds up), it stops (handing its runs back), then BIN serves
#            with its defaults and prose-load invokes RUNS more: does the queue drain?
# PostgreSQL: the database prose_qm_sit is created and dropped on $PG.
set -uo pipefail
cd "${BENCH_DIR:-.}"
PG=${PG:-postgres://postgres@127.0.0.1:5432}
PORT=${PORT:-18733}
RUNS=${RUNS:-20000}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
up() { for i in $(seq 150); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && return; sleep 0.2; done; }
fresh() { # $1 backend → db flags in DB
  rm -rf qd
  if [ "$1" = pg ]; then
    psql -q "$PG/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS prose_qm_sit" -c "CREATE DATABASE prose_qm_sit" >/dev/null
    DB=(--database "$PG/prose_qm_sit?sslmode=disable")
  else DB=(--data qd); fi
}
load() { # $1 binary, $2 label, rest: serve flags
  local B=$1 L=$2; shift 2
  ./prose-$B serve "${DB[@]}" --addr 127.0.0.1:$PORT --log-level error "$@" > qserve.log 2>&1 & local pid=$!
  up
  local c0; c0=$(cpu $pid)
  local out; out=$(./prose-load --addr 127.0.0.1:$PORT --init qinit.json --runs $RUNS --concurrency 32 2>&1)
  local c1; c1=$(cpu $pid)
  kill $pid; wait $pid 2>/dev/null
  echo "$L $B $*: $(echo "$out" | grep '^completed:' | cut -d' ' -f2) runs/s | $(( (c1-c0)*10000/RUNS )) µs/run | load $(cut -d' ' -f1 /proc/loadavg)"
  echo "$out" | tail -4 | sed 's/^/    /'
}
runs() {
  for BE in ${BACKENDS:-sqlite pg}; do for mode in default -1ns; do for r in $(seq ${ROUNDS:-3}); do for B in base qm; do
    fresh $BE; ./prose-$B init --json "${DB[@]}" > qinit.json 2>/dev/null
    if [ $mode = default ]; then load $B "$BE r$r"; else load $B "$BE r$r" --inline-window -1ns; fi
  done; done; done; done
  [ "${BACKENDS:-sqlite pg}" = sqlite ] || psql -q "$PG/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS prose_qm_sit" >/dev/null
}
prefill() {
  for r in $(seq ${ROUNDS:-2}); do for B in base qm; do
    fresh sqlite; ./prose-base init --json "${DB[@]}" > qinit.json 2>/dev/null
    ./prose-base serve "${DB[@]}" --addr 127.0.0.1:$PORT --log-level error --workers 1 --inline-window -1ns > qserve0.log 2>&1 & local pid=$!
    up; timeout 4 ./prose-load --addr 127.0.0.1:$PORT --init qinit.json --runs 1000000 --concurrency 32 >/dev/null 2>&1
    kill $pid; wait $pid 2>/dev/null
    load $B "prefill r$r ($(sqlite3 qd/prose.db "SELECT COUNT(*) FROM runs WHERE state = 'pending'") queued)"
  done; done
}
"${1:-runs}"
