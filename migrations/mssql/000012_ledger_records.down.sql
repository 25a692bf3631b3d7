-- Undoes 000012: the policy's predicates first (the policy is schema-bound to the tables),
-- then the tables and the column. PriorPhase is dropped with its values: closing a decision
-- then leaves the attempt's phase alone, as for rows written before 000012.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

EXEC(N'ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP BLOCK PREDICATE ON [dbo].[ReleaseOwners] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[ReleaseOwners] BEFORE UPDATE,
    DROP BLOCK PREDICATE ON [dbo].[ReleaseOwners] AFTER UPDATE,
    DROP BLOCK PREDICATE ON [dbo].[ReleaseOwners] BEFORE DELETE,
    DROP FILTER PREDICATE ON [dbo].[PurgeBacklog],
    DROP BLOCK PREDICATE ON [dbo].[PurgeBacklog] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[PurgeBacklog] AFTER UPDATE;');

DROP TABLE [dbo].[PurgeBacklog];
DROP TABLE [dbo].[ReleaseOwners];
ALTER TABLE [dbo].[DecisionRequests] DROP COLUMN [PriorPhase];

COMMIT TRANSACTION;
