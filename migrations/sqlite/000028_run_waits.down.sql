DROP TABLE RunWaits;
ALTER TABLE DecisionRequests DROP COLUMN RunId;
ALTER TABLE DecisionRequests DROP COLUMN IdempotencyKey;
ALTER TABLE DecisionRequests DROP COLUMN RequestHash;
