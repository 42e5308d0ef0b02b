#!/usr/bin/env bash
# GetWorkspace over gRPC, ghz -c32 -z8s, alternated per round: prose serve's gRPC-only port
# (--grpc-addr), prose-bare's gRPC, prose serve's shared port. One prose serve (SQLite), one prose-bare.
# usage: BENCH_DIR=/tmp/bench ROUNDS=3 grpconly-sitting.sh   (prose-new, prose-bare in BENCH_DIR; ghz on PATH)
set -uo pipefail
cd "${BENCH_DIR:-.}"   # holds prose-new and prose-bare
P=${P:-./prose-new}; BARE=./prose-bare
SHARED=18921; ONLY=18922; BHTTP=18923; BGRPC=18924
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
rm -rf d; $P init --json --data d > init.json 2>/dev/null
$P serve --data d --addr 127.0.0.1:$SHARED --grpc-addr 127.0.0.1:$ONLY --log-level error > serve.log 2>&1 & pid=$!
for i in $(seq 50); do curl -s -o /dev/null 127.0.0.1:$SHARED/healthz && break; sleep 0.2; done
KEY=$(jq -r .api_key init.json); WS=$(jq -r .workspace init.json)
ORG=$(echo $WS | cut -d/ -f2); WSID=$(echo $WS | cut -d/ -f4)
curl -s -H "Authorization: Bearer $KEY" http://127.0.0.1:$SHARED/api/v1/organizations/$ORG/workspaces/$WSID > ws.json
$BARE --workspace ws.json --key "$KEY" --http 127.0.0.1:$BHTTP --grpc 127.0.0.1:$BGRPC > bare.log 2>&1 & bp=$!
sleep 0.5
one() { # $1 label, $2 port, $3 server pid
  local c0 c1 out n
  c0=$(cpu $3)
  out=$(ghz --insecure --call prose.platform.v1.WorkspaceService/GetWorkspace -d "{\"organization_id\":\"$ORG\",\"workspace_id\":\"$WSID\"}" \
    --metadata "{\"authorization\":\"Bearer $KEY\"}" -c 32 -z 8s 127.0.0.1:$2 2>&1)
  c1=$(cpu $3)
  n=$(echo "$out" | awk '/Count:/{print $2; exit}')
  echo "$1: $(echo "$out" | awk '/Requests\/sec/{print $2}') req/s, count $n, server CPU $(( (c1-c0)*10000000/(n>0?n:1) / 1000 )) µs/call, $(echo "$out" | grep -c '\[OK\]') ok-line, errors: $(echo "$out" | awk '/Error distribution/{f=1;next} f' | tr '\n' ' ' | cut -c1-120), load $(cut -d' ' -f1 /proc/loadavg)"
}
date -u +%H:%M:%S
for r in $(seq ${ROUNDS:-3}); do
  echo "round $r"
  one grpc-only $ONLY $pid
  one bare $BGRPC $bp
  one shared $SHARED $pid
done
date -u +%H:%M:%S
kill $pid $bp; wait $pid $bp 2>/dev/null
