SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE [dbo].[CallRecords] DROP COLUMN [Model], [Provider], [Operation], [ResponseModel], [FinishReasons],
    [InputTokens], [OutputTokens], [CacheReadInputTokens], [CacheCreationInputTokens], [ReasoningOutputTokens], [CostMicros];

COMMIT TRANSACTION;
