-- migration: additive
-- Webhooks (DESIGN.md section 5b): endpoints and the outbox of deliveries (see
-- migrations/mssql 000032 for the reasons of each column and index).
CREATE TABLE WebhookEndpoints (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    Name TEXT NOT NULL,
    Url TEXT NOT NULL,
    Events TEXT NOT NULL,
    Active INTEGER NOT NULL,
    Description TEXT NULL,
    Secret TEXT NOT NULL,
    PreviousSecret TEXT NULL,
    PreviousSecretUntil DATETIME NULL,
    DisabledAt DATETIME NULL,
    CreatedAt DATETIME NOT NULL,
    UpdatedAt DATETIME NOT NULL,
    Version INTEGER NOT NULL,
    PRIMARY KEY (TenantId, Name)
);
-- Rowversion emulation (see 000001), as on Projects.
CREATE TRIGGER TR_WebhookEndpoints_VersionInsert BEFORE INSERT ON WebhookEndpoints
WHEN NEW.Version IS NULL OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_WebhookEndpoints_VersionUpdate BEFORE UPDATE ON WebhookEndpoints
WHEN NEW.Version IS NULL OR NEW.Version <= OLD.Version OR NEW.Version < (SELECT Value FROM RowVersionCounter)
BEGIN SELECT RAISE(ABORT, 'rowversion not stamped'); END;
CREATE TRIGGER TR_WebhookEndpoints_VersionAdvanceInsert AFTER INSERT ON WebhookEndpoints
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TRIGGER TR_WebhookEndpoints_VersionAdvanceUpdate AFTER UPDATE ON WebhookEndpoints
BEGIN UPDATE RowVersionCounter SET Value = NEW.Version WHERE Id = 1 AND Value < NEW.Version; END;
CREATE TABLE WebhookDeliveries (
    TenantId TEXT NOT NULL REFERENCES Tenants (TenantId),
    DeliveryId TEXT NOT NULL,
    EndpointName TEXT NOT NULL,
    EventType TEXT NOT NULL,
    Payload TEXT NOT NULL,
    Status TEXT NOT NULL,
    Attempts INTEGER NOT NULL,
    CreatedAt DATETIME NOT NULL,
    NextAttemptAt DATETIME NOT NULL,
    RetryUntil DATETIME NOT NULL,
    LastAttemptAt DATETIME NULL,
    LastStatusCode INTEGER NULL,
    LastError TEXT NULL,
    DeliveredAt DATETIME NULL,
    PRIMARY KEY (TenantId, DeliveryId)
);
CREATE INDEX IX_WebhookDeliveries_Due ON WebhookDeliveries (NextAttemptAt) WHERE Status = 'pending';
CREATE INDEX IX_WebhookDeliveries_Tenant_Created ON WebhookDeliveries (TenantId, CreatedAt, DeliveryId);
CREATE INDEX IX_WebhookDeliveries_Delivered ON WebhookDeliveries (DeliveredAt) WHERE Status = 'delivered';
