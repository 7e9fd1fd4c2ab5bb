#!/bin/sh
# DEMO ONLY (deploy/docker-compose.yml): the consumer groups the exporter knows
# (registry/values.py STREAM_GROUPS), one message each, one of them delivered and
# not acknowledged, and one dead-letter entry. Does nothing if already loaded.
set -eu
cli() { redis-cli -h "${REDIS_HOST:-redis}" -p "${REDIS_PORT:-6379}" "$@"; }

if [ "$(cli EXISTS orpycamcp.document.events)" = "1" ]; then
    echo "demo streams already loaded"
    exit 0
fi

for pair in \
    orpycamcp.document.events:signature-service \
    orpycamcp.document.events:workflow-service \
    orpycamcp.document.events:notification-service \
    orpycamcp.workflow.events:notification-service; do
    stream=${pair%%:*}
    group=${pair#*:}
    cli XGROUP CREATE "$stream" "$group" 0 MKSTREAM >/dev/null
    cli XADD "$stream" '*' event document.signed >/dev/null
done
cli XREADGROUP GROUP signature-service demo-consumer COUNT 1 STREAMS orpycamcp.document.events '>' >/dev/null
cli XADD orpycamcp.signature.deadletter '*' event document.signed error 'certificate expired' >/dev/null
echo "demo streams loaded"
