-- Undoes 000028: the policy's predicates first (the policy is schema-bound to the table).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[RunWaits],
    DROP BLOCK PREDICATE ON [dbo].[RunWaits] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[RunWaits] AFTER UPDATE;');

DROP TABLE [dbo].[RunWaits];
ALTER TABLE [dbo].[DecisionRequests] DROP COLUMN [RunId], [IdempotencyKey], [RequestHash];

COMMIT TRANSACTION;
