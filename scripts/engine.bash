# Sourced by scripts/test and .ci/run (not run): the Docker engine of the image and
# compose tests. Unless DOCKER_HOST names one, `engine_and_images` starts a private
# engine (own socket and data root, stopped when the sourcing shell exits) and builds
# the images the tests run on it in the background (python -m devkit.images: a
# Debian base by debootstrap, the server images, the exporter's), mostly waiting on
# the mirror and the disk while the caller runs other work, the tests included: the
# build holds the lock ORPYCAMCP_IMAGES_LOCK names until it ends, which the first
# test that needs the images waits for (tests/deploy/conftest.py); `images_ready`
# reaps the build and prints its log. The tests find the images built (the recipe's
# hash is their label); a build that failed here is done again by the first test
# that needs it, which fails with the reason.
images_pid=""
images_log=""

engine_and_images() {
    [ -z "${DOCKER_HOST:-}" ] || return 0
    local engine_dir host
    engine_dir="$(mktemp -d /tmp/orpycamcp-docker-XXXXXX)"
    if host="$(.venv/bin/python -m devkit.docker_engine start "$engine_dir")"; then
        export "${host?}" TESTCONTAINERS_RYUK_DISABLED=true
        echo "$0: Docker engine started, ${host}" >&2
        # shellcheck disable=SC2064 # the directory is fixed now
        trap ".venv/bin/python -m devkit.docker_engine stop '$engine_dir'; rm -rf '$engine_dir'" EXIT
        images_log="$engine_dir/images.log"
        # Locked before the build starts, held by the build alone (its inherited descriptor)
        # until it exits: a test can never find the lock free while the build runs.
        export ORPYCAMCP_IMAGES_LOCK="$engine_dir/images.lock"
        local lock_fd
        exec {lock_fd}>"$ORPYCAMCP_IMAGES_LOCK"
        flock "$lock_fd"
        .venv/bin/python -m devkit.images >"$images_log" 2>&1 &
        images_pid=$!
        exec {lock_fd}>&-
    else
        echo "$0: no Docker engine could start: the image and compose tests will fail" >&2
        rm -rf "$engine_dir"
    fi
}

images_ready() {
    [ -n "$images_pid" ] || return 0
    if wait "$images_pid"; then
        cat "$images_log" >&2
    else
        echo "$0: the images could not be built ahead of the tests (the first test that needs them tries again):" >&2
        tail -n 20 "$images_log" >&2
    fi
    images_pid=""
}
