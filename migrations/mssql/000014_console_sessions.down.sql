DROP TABLE [dbo].[ConsoleSessions];
