ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[WebhookEndpoints],
    DROP BLOCK PREDICATE ON [dbo].[WebhookEndpoints] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[WebhookEndpoints] AFTER UPDATE,
    DROP FILTER PREDICATE ON [dbo].[WebhookDeliveries],
    DROP BLOCK PREDICATE ON [dbo].[WebhookDeliveries] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[WebhookDeliveries] AFTER UPDATE;
