#!/usr/bin/env bash
# daemon_idle.sh BIN STORE [SECONDS]: starts the daemon on STORE (127.0.0.1:18710),
# prints VmRSS/VmHWM every 5 s for SECONDS, then stops it (SIGTERM).
B=$1; S=$2; T=${3:-30}
$B daemon --store "$S" --listen 127.0.0.1:18710 > /tmp/hmem-daemon.log 2>&1 &
pid=$!
for ((t=5; t<=T; t+=5)); do sleep 5; echo "t=$t $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' ' | tr '\n' ' ')"; done
kill -TERM $pid; wait $pid
