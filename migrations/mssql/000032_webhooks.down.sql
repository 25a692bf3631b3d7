-- Reverses 000032 (000033's down removes the tables from the policy first).
SET XACT_ABORT ON;
BEGIN TRANSACTION;
DROP TABLE [dbo].[WebhookDeliveries];
DROP TABLE [dbo].[WebhookEndpoints];
COMMIT TRANSACTION;
