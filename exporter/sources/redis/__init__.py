"""The Redis Streams source: one pipelined round trip per server.

The reader is `RedisStreams` (exporter.sources.redis.source); redis-py's errors
become the exporter's typed errors where they are caught
(exporter.sources.redis.errors).
"""
