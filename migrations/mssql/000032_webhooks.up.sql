-- migration: additive
-- Webhooks (DESIGN.md section 5b): a tenant's endpoints, and the outbox of deliveries the
-- transactions that cause events write (internal/webhooks). New tables only. The secret is
-- kept as written: signing needs it (a hash could not sign). Row-level security for both
-- tables is added to the policy in 000033 (ALTER SECURITY POLICY first in its batch).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[WebhookEndpoints] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Name] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Url] nvarchar(2048) NOT NULL,
    [Events] nvarchar(512) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Active] bit NOT NULL,
    [Description] nvarchar(1024) NULL,
    [Secret] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [PreviousSecret] nvarchar(128) COLLATE Latin1_General_100_BIN2 NULL,
    [PreviousSecretUntil] datetimeoffset(3) NULL,
    [DisabledAt] datetimeoffset(3) NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [UpdatedAt] datetimeoffset(3) NOT NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_WebhookEndpoints] PRIMARY KEY CLUSTERED ([TenantId], [Name]),
    CONSTRAINT [FK_WebhookEndpoints_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

-- One row per event and endpoint. DeliveryId is the webhook-id, the same on every try.
-- Status: pending (due at NextAttemptAt; a try in flight holds the row by moving
-- NextAttemptAt to the end of its lease), delivered, failed.
CREATE TABLE [dbo].[WebhookDeliveries] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [DeliveryId] uniqueidentifier NOT NULL,
    [EndpointName] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [EventType] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Payload] nvarchar(max) NOT NULL,
    [Status] nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Attempts] int NOT NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [NextAttemptAt] datetimeoffset(3) NOT NULL,
    [RetryUntil] datetimeoffset(3) NOT NULL,
    [LastAttemptAt] datetimeoffset(3) NULL,
    [LastStatusCode] int NULL,
    [LastError] nvarchar(256) NULL,
    [DeliveredAt] datetimeoffset(3) NULL,
    CONSTRAINT [PK_WebhookDeliveries] PRIMARY KEY CLUSTERED ([TenantId], [DeliveryId]),
    CONSTRAINT [FK_WebhookDeliveries_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);
-- The dispatchers' due scan across tenants (like IX_Runs_LeaseExpiry, a maintenance index,
-- so it does not lead with TenantId): pending rows only, by due time.
CREATE INDEX [IX_WebhookDeliveries_Due] ON [dbo].[WebhookDeliveries] ([NextAttemptAt])
    INCLUDE ([EndpointName], [Attempts]) WHERE [Status] = N'pending';
-- The tenant's listing, newest first.
CREATE INDEX [IX_WebhookDeliveries_Tenant_Created] ON [dbo].[WebhookDeliveries] ([TenantId], [CreatedAt], [DeliveryId]);
-- Retention's purge of delivered rows across tenants.
CREATE INDEX [IX_WebhookDeliveries_Delivered] ON [dbo].[WebhookDeliveries] ([DeliveredAt]) WHERE [Status] = N'delivered';

COMMIT TRANSACTION;
