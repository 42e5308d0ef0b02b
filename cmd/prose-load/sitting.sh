#!/usr/bin/env bash
# One sitting: prose-base against prose-new (see BENCHMARKS.md), alternating, fresh database each.
# usage: sitting.sh runs|http  ; binaries in BENCH_DIR: prose-base prose-new prose-load prose-bare
set -uo pipefail
cd "${BENCH_DIR:-.}"   # the directory holding prose-base, prose-new, prose-load, prose-bare
PG=postgres://postgres@127.0.0.1:5432
PORT=18613
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
runs_one() { # $1 binary tag, $2 backend
  local B=$1 BE=$2 db=()
  rm -rf d; 
  if [ "$BE" = pg ]; then
    psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS prose_sit" -c "CREATE DATABASE prose_sit" >/dev/null
    db=(--database "$PG/prose_sit?sslmode=disable")
  else db=(--data d); fi
  ./prose-$B init --json "${db[@]}" > init.json 2>/dev/null
  ./prose-$B serve "${db[@]}" --addr 127.0.0.1:$PORT --log-level error > serve.log 2>&1 &
  local pid=$!
  for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.2; done
  local c0=$(cpu $pid)
  local out; out=$(./prose-load --addr 127.0.0.1:$PORT --init init.json --runs ${RUNS:-40000} --concurrency 32 2>&1)
  local c1=$(cpu $pid)
  kill $pid; wait $pid 2>/dev/null
  local rps; rps=$(echo "$out" | grep "^completed:" | cut -d" " -f2)
  echo "$BE $B: $rps runs/s | server CPU ticks $((c1-c0)) ($(( (c1-c0)*10000/${RUNS:-40000} )) µs/run) | load $(cut -d' ' -f1 /proc/loadavg)"
  echo "$out" | tail -4 | sed 's/^/    /'
}
http_one() {
  local B=$1
  rm -rf d; ./prose-$B init --json --data d > init.json 2>/dev/null
  ./prose-$B serve --data d --addr 127.0.0.1:$PORT --log-level error > serve.log 2>&1 &
  local pid=$!
  for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$PORT/healthz && break; sleep 0.2; done
  KEY=$(jq -r .api_key init.json); WS=$(jq -r .workspace init.json)
  ORG=$(echo $WS | cut -d/ -f2); WSID=$(echo $WS | cut -d/ -f4)
  curl -s -H "Authorization: Bearer $KEY" http://127.0.0.1:$PORT/api/v1/organizations/$ORG/workspaces/$WSID > ws.json
  wrk -t2 -c32 -d8s -H "Authorization: Bearer $KEY" http://127.0.0.1:$PORT/api/v1/organizations/$ORG/workspaces/$WSID | grep -E "Requests/sec" | sed "s/^/HTTP $B /"
  ghz --insecure --call prose.platform.v1.WorkspaceService/GetWorkspace -d "{\"organization_id\":\"$ORG\",\"workspace_id\":\"$WSID\"}" --metadata "{\"authorization\":\"Bearer $KEY\"}" -c 32 -z 8s 127.0.0.1:$PORT 2>/dev/null | grep -E "Requests/sec" | sed "s/^/gRPC $B /"
  kill $pid; wait $pid 2>/dev/null
  if [ "$B" = new ]; then
    ./prose-bare --workspace ws.json --key "$KEY" --http 127.0.0.1:18082 --grpc 127.0.0.1:18083 & local bp=$!
    sleep 0.5
    wrk -t2 -c32 -d8s -H "Authorization: Bearer $KEY" http://127.0.0.1:18082/ | grep -E "Requests/sec" | sed "s/^/HTTP bare /"
    ghz --insecure --call prose.platform.v1.WorkspaceService/GetWorkspace -d "{\"organization_id\":\"$ORG\",\"workspace_id\":\"$WSID\"}" --metadata "{\"authorization\":\"Bearer $KEY\"}" -c 32 -z 8s 127.0.0.1:18083 2>/dev/null | grep -E "Requests/sec" | sed "s/^/gRPC bare /"
    kill $bp; wait $bp 2>/dev/null
  fi
}
case "${1:-runs}" in
  runs) for BE in ${BACKENDS:-sqlite pg}; do for r in $(seq ${ROUNDS:-2}); do for B in base new; do runs_one $B $BE; done; done; done ;;
  http) for r in $(seq ${ROUNDS:-2}); do for B in base new; do http_one $B; done; done ;;
esac
