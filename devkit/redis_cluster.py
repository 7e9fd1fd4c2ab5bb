"""A real Redis Cluster and a master+replica pair, on free loopback ports, for
the tests and the benchmarks.

The cluster is made as an operator makes one: N `redis-server --cluster-enabled
yes` processes joined by `redis-cli --cluster create ... --cluster-yes`, waited
for until every node says `cluster_state:ok`. Slots are moved the way
`redis-cli --cluster reshard` moves them (SETSLOT IMPORTING / MIGRATING,
MIGRATE, SETSLOT NODE), one step at a time so a test can act in between.

The replica pair is a master and a `--replicaof` replica; its link is cut by
pointing the replica at a port nobody listens on (REPLICAOF): as in a network
partition, it keeps serving the data it has while its master goes on taking
writes it never receives."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from devkit.servers import LocalRedis, ServerUnavailable, free_port
from exporter.tools import throwaway

NODE_TIMEOUT_MS = 2000  # how soon a node missing its peers declares the cluster down


def redis_cli() -> str:
    binary = shutil.which("redis-cli") or "/usr/bin/redis-cli"
    if not Path(binary).exists():
        raise ServerUnavailable("Redis Cluster", "redis-cli not found (apt-get install redis-tools)")
    return binary


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=10)


def start_redis_with(extra: Sequence[str]) -> LocalRedis:
    """A throwaway Redis started with `extra` arguments."""
    return throwaway.start_redis(LocalRedis, tuple(extra))


def _wait(what: str, check: object, within: float) -> None:
    assert callable(check)
    end = time.monotonic() + within
    while not check():
        if time.monotonic() > end:
            raise ServerUnavailable("Redis Cluster", f"{what} not within {within:g} s")
        time.sleep(0.05)


@dataclass
class LocalCluster:
    """A running Redis Cluster: masters first, then replicas (if any)."""

    nodes: list[LocalRedis]
    masters: int
    stopped: set[int] = field(default_factory=set)

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports[: self.masters])

    def client(self, port: int) -> redis.Redis:
        """A plain client of one node (no redirection followed)."""
        return _client(port)

    def node_of_port(self, port: int) -> LocalRedis:
        return next(node for node in self.nodes if node.port == port)

    def _running(self) -> list[LocalRedis]:
        return [node for node in self.nodes if node.port not in self.stopped]

    def slot_owner(self, slot: int) -> int:
        """The port of the master serving `slot`, as the running nodes agree."""
        with self.client(self._running()[0].port) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        raise AssertionError(f"slot {slot} is not served")

    def keyslot(self, key: str) -> int:
        with self.client(self._running()[0].port) as client:
            slot: int = client.execute_command("CLUSTER KEYSLOT", key)
            return slot

    def node_id(self, port: int) -> str:
        with self.client(port) as client:
            node_id: str = client.execute_command("CLUSTER MYID")
            return node_id

    def wait_ok(self, within: float = 30.0) -> None:
        """Until every running node says cluster_state:ok and agrees on every slot's owner."""

        def ok() -> bool:
            owners: list[object] = []
            for node in self._running():
                with self.client(node.port) as client:
                    if client.cluster("INFO")["cluster_state"] != "ok":
                        return False
                    owners.append(sorted((s[0], s[1], s[2][1]) for s in client.execute_command("CLUSTER SLOTS")))
            return all(owner == owners[0] for owner in owners)

        _wait("cluster_state:ok on every node", ok, within)

    def wait_down(self, within: float = 30.0) -> None:
        """Until the running nodes say cluster_state:fail (a master is gone, no replica to promote)."""

        def down() -> bool:
            for node in self._running():
                with self.client(node.port) as client:
                    if client.cluster("INFO")["cluster_state"] != "fail":
                        return False
            return True

        _wait("cluster_state:fail on every running node", down, within)

    def announce(self, ports: dict[int, int]) -> None:
        """Each node tells clients to reach it at another port (`cluster-announce-port`:
        a relay in front of it); an empty map restores the nodes' own ports."""
        for port in self.ports:
            with self.client(port) as client:
                client.config_set("cluster-announce-port", ports.get(port, 0))

        def agreed() -> bool:
            wanted = {ports.get(port, port) for port in self.ports[: self.masters]}
            for node in self._running():
                with self.client(node.port) as client:
                    if {int(s[2][1]) for s in client.execute_command("CLUSTER SLOTS")} != wanted:
                        return False
            return True

        _wait("every node announcing its new port", agreed, 30)

    # -- resharding, step by step -------------------------------------------------

    def begin_migration(self, slot: int, target: int, source: int | None = None) -> int:
        """SETSLOT IMPORTING on the target, MIGRATING on the owner; returns the owner's port."""
        source = self.slot_owner(slot) if source is None else source
        with self.client(target) as dst, self.client(source) as src:
            dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", self.node_id(source))
            src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", self.node_id(target))
        return source

    def migrate_keys(self, slot: int, source: int, target: int) -> list[str]:
        """MIGRATE every key of `slot` from `source` to `target`; returns the keys moved."""
        moved: list[str] = []
        with self.client(source) as src:
            while keys := src.execute_command("CLUSTER GETKEYSINSLOT", slot, 100):
                src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
                moved.extend(keys)
        return moved

    def end_migration(self, slot: int, source: int, target: int) -> None:
        """SETSLOT NODE on the target, then on the source: the slot is the target's
        (the other masters learn it from the target's bumped epoch)."""
        target_id = self.node_id(target)
        for port in (target, source):
            with self.client(port) as client:
                client.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)

    def migrate_slot(self, slot: int, target: int) -> None:
        source = self.begin_migration(slot, target)
        self.migrate_keys(slot, source, target)
        self.end_migration(slot, source, target)
        self.wait_ok()

    # -- faults --------------------------------------------------------------------

    def stop_node(self, port: int) -> None:
        self.node_of_port(port).stop()
        self.stopped.add(port)

    def start_node(self, port: int) -> None:
        self.node_of_port(port).start()
        self.stopped.discard(port)

    def remove(self) -> None:
        for node in self.nodes:
            node.remove()


def start_cluster(masters: int = 3, replicas_per_master: int = 0) -> LocalCluster:
    """A Redis Cluster of `masters` masters (and replicas), cluster_state:ok on every node."""
    cli = redis_cli()
    nodes: list[LocalRedis] = []
    try:
        for _ in range(masters * (1 + replicas_per_master)):
            nodes.append(
                start_redis_with(
                    (
                        "--cluster-enabled",
                        "yes",
                        # A bus port of its own: the default (port + 10000) may be taken, or past 65535.
                        "--cluster-port",
                        str(free_port()),
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        str(NODE_TIMEOUT_MS),
                        "--enable-debug-command",
                        "local",
                    )
                )
            )
        done = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{node.port}" for node in nodes),
                "--cluster-replicas",
                str(replicas_per_master),
                "--cluster-yes",
            ],
            capture_output=True,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            output = done.stdout.decode(errors="replace")[-800:]
            raise ServerUnavailable("Redis Cluster", f"redis-cli --cluster create failed: {output}")
        cluster = LocalCluster(nodes, masters)
        cluster.wait_ok()
        return cluster
    except BaseException:
        for node in nodes:
            node.remove()
        raise


@dataclass
class ReplicaPair:
    """A master and its replica (`--replicaof`), streaming."""

    master: LocalRedis
    replica: LocalRedis

    def link(self) -> dict[str, object]:
        with _client(self.replica.port) as client:
            info: dict[str, object] = client.info("replication")
            return info

    def wait_link_up(self, within: float = 30.0) -> None:
        def up() -> bool:
            if self.link().get("master_link_status") != "up":
                return False
            with _client(self.master.port) as master:
                offset = master.info("replication")["master_repl_offset"]
            return int(str(self.link()["slave_repl_offset"])) >= int(offset)

        _wait("the replica's link up and caught up", up, within)

    def cut(self) -> None:
        """The replica's master moves where nothing answers: the link is down at once, the data kept."""
        with _client(self.replica.port) as client:
            client.replicaof("127.0.0.1", free_port())
        _wait("the replica's link down", lambda: self.link().get("master_link_status") == "down", 10)

    def mend(self) -> None:
        with _client(self.replica.port) as client:
            client.replicaof("127.0.0.1", self.master.port)
        self.wait_link_up()

    def remove(self) -> None:
        self.master.remove()
        self.replica.remove()


def start_replica_pair() -> ReplicaPair:
    master = start_redis_with(("--enable-debug-command", "local", "--repl-ping-replica-period", "1"))
    try:
        replica = start_redis_with(("--replicaof", "127.0.0.1", str(master.port), "--enable-debug-command", "local"))
    except BaseException:
        master.remove()
        raise
    pair = ReplicaPair(master, replica)
    try:
        pair.wait_link_up()
    except BaseException:
        pair.remove()
        raise
    return pair
