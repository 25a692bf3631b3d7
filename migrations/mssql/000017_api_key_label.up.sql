-- migration: additive
-- Keys carry an optional operator label and when they were last used (DESIGN.md section 8;
-- see migrations/sqlite 000017). Both columns are nullable, so adding them is a metadata
-- change that rewrites no row.
SET XACT_ABORT ON;
BEGIN TRANSACTION;

ALTER TABLE [dbo].[ApiKeys] ADD
    [Label] nvarchar(100) NULL,
    [LastUsedAt] datetimeoffset(3) NULL;

COMMIT TRANSACTION;
