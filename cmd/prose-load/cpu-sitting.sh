#!/usr/bin/env bash
# GetWorkspace over HTTP, binaries in the order given, one line each:
#   cpu-sitting.sh base new bare base new bare ...
# TAG is prose-TAG's suffix, or "bare" (prose-bare answering the bytes the first
# prose-base served). Each: one data directory (made once by prose-base init),
# serve, wrk -t2 -c32 -d${D:-8}s, then req/s, the server's CPU (user+system,
# /proc/PID/stat) per request, wrk's CPU per request, load, peak RSS (VmHWM).
# On a shared machine the CPU per request is steadier than req/s: with two
# cores saturated, req/s is about 2 s / (server + wrk CPU per request).
# EXTRA="--flag value" adds serve flags to every prose binary.
set -uo pipefail
cd "${BENCH_DIR:-.}"   # the directory holding prose-base, prose-new, ..., prose-bare
PORT=18714
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
setup() { rm -rf dm; ./prose-base init --json --data dm > initm.json 2>/dev/null; }
one() {
  local B=$1 pid url
  KEY=$(jq -r .api_key initm.json); WS=$(jq -r .workspace initm.json)
  ORG=$(echo $WS | cut -d/ -f2); WSID=$(echo $WS | cut -d/ -f4)
  if [ $B = bare ]; then
    ./prose-bare --workspace wsm.json --key "$KEY" --http 127.0.0.1:$PORT & pid=$!
    url=http://127.0.0.1:$PORT/
    sleep 0.5
  else
    ./prose-$B serve --data dm --addr 127.0.0.1:$PORT --log-level error $EXTRA > servem.log 2>&1 & pid=$!
    url=http://127.0.0.1:$PORT/api/v1/organizations/$ORG/workspaces/$WSID
    for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.2; done
    curl -s -H "Authorization: Bearer $KEY" $url > wsm.json
  fi
  local c0=$(cpu $pid)
  local out; out=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t2 -c32 -d${D:-8}s -H "Authorization: Bearer $KEY" $url; } 2>&1 )
  local c1=$(cpu $pid); local hwm=$(awk "/VmHWM/{print \$2}" /proc/$pid/status)
  kill $pid; wait $pid 2>/dev/null
  local n=$(echo "$out" | awk '/requests in/{print $1}')
  local rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  local wc=$(echo "$out" | awk '/WRKCPU/{print $2+$3}')
  echo "$B rps=$rps srv_us=$(echo "($c1-$c0)*10000/$n" | bc -l | xargs printf %.1f) wrk_us=$(echo "$wc*1000000/$n" | bc -l | xargs printf %.1f) load=$(cut -d' ' -f1 /proc/loadavg) hwm_kB=$hwm"
}
setup
# first run of prose-base writes wsm.json for bare
EXTRA="" one base >/dev/null
for t in "$@"; do EXTRA="${EXTRA:-}" one $t; done
