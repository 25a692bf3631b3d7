DROP TABLE [dbo].[Runs];
