DROP TABLE [dbo].[TaskRunLocks];
