DROP TABLE IdempotencyTombstones;
