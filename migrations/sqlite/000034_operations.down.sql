DROP TABLE OperationRuns;
DROP TABLE Operations;
