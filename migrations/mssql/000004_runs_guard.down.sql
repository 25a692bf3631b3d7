DROP TRIGGER [dbo].[TR_Runs_Guard];
