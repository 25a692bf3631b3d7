DROP TABLE [dbo].[Projects];
