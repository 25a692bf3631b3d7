DELETE FROM InsightCells WHERE Grain = 1382400;
ALTER TABLE FeedProjectors DROP COLUMN CoarseThrough;
