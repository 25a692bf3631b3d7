ALTER TABLE Runs DROP COLUMN Metadata;
ALTER TABLE Runs DROP COLUMN Tags;
ALTER TABLE ExecutionAttempts DROP COLUMN ErrorDetails;
ALTER TABLE ExecutionAttempts DROP COLUMN ErrorMessage;
ALTER TABLE ExecutionAttempts DROP COLUMN ErrorCode;
