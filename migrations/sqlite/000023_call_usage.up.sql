-- migration: additive
-- What a model call used and cost (DESIGN.md 5b "What it cost", issue 31): the model,
-- provider and operation a call names when it starts; the usage, response model, finish
-- reasons and cost it reports when it finishes. Every column is nullable (a tool call has
-- none of them, and older rows keep NULL), so an older binary still works.
ALTER TABLE CallRecords ADD COLUMN Model TEXT NULL;
ALTER TABLE CallRecords ADD COLUMN Provider TEXT NULL;
ALTER TABLE CallRecords ADD COLUMN Operation TEXT NULL;
ALTER TABLE CallRecords ADD COLUMN ResponseModel TEXT NULL;
ALTER TABLE CallRecords ADD COLUMN FinishReasons TEXT NULL;
ALTER TABLE CallRecords ADD COLUMN InputTokens INTEGER NULL;
ALTER TABLE CallRecords ADD COLUMN OutputTokens INTEGER NULL;
ALTER TABLE CallRecords ADD COLUMN CacheReadInputTokens INTEGER NULL;
ALTER TABLE CallRecords ADD COLUMN CacheCreationInputTokens INTEGER NULL;
ALTER TABLE CallRecords ADD COLUMN ReasoningOutputTokens INTEGER NULL;
ALTER TABLE CallRecords ADD COLUMN CostMicros INTEGER NULL;
