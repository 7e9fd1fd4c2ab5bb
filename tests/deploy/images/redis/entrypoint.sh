#!/bin/sh
# As the official image: options alone go to redis-server, and redis-server
# serves the container network (no protected mode) unless told otherwise.
set -eu
case "${1:-}" in -*) set -- redis-server "$@" ;; esac
if [ "${1:-}" = redis-server ]; then
    shift
    set -- redis-server --bind '* -::*' --protected-mode no "$@"
fi
exec "$@"
