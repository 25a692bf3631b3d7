-- migration: additive
-- The insights projector's coarse cells (16-day buckets of the binned metrics: a 500-day
-- calls request reads about 30 buckets instead of 500; internal/insights rollup.go) are
-- derived state an older binary's projector does not maintain. CoarseThrough is the
-- Position through which they are complete: an insight reads them only while it equals
-- Position, and the projector rebuilds them from the daily cells when it does not (NULL
-- after this migration, or after an older binary moved Position on its own). An older
-- binary never reads the column.
ALTER TABLE FeedProjectors ADD COLUMN CoarseThrough INTEGER NULL;
