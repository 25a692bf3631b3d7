package webhooks

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLiteName, &sqliteQueries) }

const sqliteEndpointCols = `TenantId, Name, Url, Events, Active, Description, Secret, PreviousSecret, PreviousSecretUntil,
    DisabledAt, CreatedAt, UpdatedAt, Version`

const sqliteDeliveryCols = `TenantId, DeliveryId, EndpointName, EventType, Payload, Status, Attempts, CreatedAt,
    NextAttemptAt, RetryUntil, LastAttemptAt, LastStatusCode, LastError, DeliveredAt`

var sqliteQueries = queries{
	getEndpoint: `SELECT ` + sqliteEndpointCols + ` FROM WebhookEndpoints WHERE TenantId = ?1 AND Name = ?2`,
	// Version is stamped from the database-wide counter (migrations/sqlite 000001).
	insertEndpoint: `INSERT INTO WebhookEndpoints (TenantId, Name, Url, Events, Active, Description, Secret, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, (SELECT Value + 1 FROM RowVersionCounter))`,
	updateEndpoint: `UPDATE WebhookEndpoints SET Url = ?3, Events = ?4, Active = ?5, Description = ?6, UpdatedAt = ?7,
    DisabledAt = CASE WHEN ?5 = 1 THEN NULL ELSE DisabledAt END, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND Name = ?2 AND Version = ?8`,
	deleteEndpoint: `DELETE FROM WebhookEndpoints WHERE TenantId = ?1 AND Name = ?2`,
	rotateSecret: `UPDATE WebhookEndpoints SET PreviousSecret = Secret, PreviousSecretUntil = ?5, Secret = ?3, UpdatedAt = ?4,
    Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND Name = ?2`,
	listEndpoints:  `SELECT ` + sqliteEndpointCols + ` FROM WebhookEndpoints WHERE TenantId = ?1 AND Name > ?2 ORDER BY Name LIMIT ?3`,
	countEndpoints: `SELECT COUNT(*) FROM (SELECT 1 FROM WebhookEndpoints WHERE TenantId = ?1 LIMIT ?2)`,
	subscribed:     `SELECT Name, Events FROM WebhookEndpoints WHERE TenantId = ?1 AND Active = 1 ORDER BY Name LIMIT ?2`,
	disable: `UPDATE WebhookEndpoints SET Active = 0, DisabledAt = ?3, UpdatedAt = ?3, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND Name = ?2 AND Active = 1`,
	insertDelivery: `INSERT INTO WebhookDeliveries (TenantId, DeliveryId, EndpointName, EventType, Payload, Status, Attempts,
    CreatedAt, NextAttemptAt, RetryUntil)
VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?6, ?7)`,
	due: `SELECT TenantId, DeliveryId, Attempts FROM WebhookDeliveries INDEXED BY IX_WebhookDeliveries_Due
WHERE Status = 'pending' AND NextAttemptAt <= ?1 AND TenantId NOT IN (SELECT value FROM json_each(?3))
ORDER BY NextAttemptAt LIMIT ?2`,
	lease: `UPDATE WebhookDeliveries SET Attempts = Attempts + 1, NextAttemptAt = ?5, LastAttemptAt = ?4
WHERE TenantId = ?1 AND DeliveryId = ?2 AND Status = 'pending' AND Attempts = ?3 AND NextAttemptAt <= ?4`,
	record: `UPDATE WebhookDeliveries SET Status = ?4, NextAttemptAt = ?5, LastStatusCode = ?6, LastError = ?7, DeliveredAt = ?8
WHERE TenantId = ?1 AND DeliveryId = ?2 AND Attempts = ?3 AND Status = 'pending'`,
	getDelivery: `SELECT ` + sqliteDeliveryCols + ` FROM WebhookDeliveries WHERE TenantId = ?1 AND DeliveryId = ?2`,
	listDeliveries: `SELECT ` + sqliteDeliveryCols + ` FROM WebhookDeliveries INDEXED BY IX_WebhookDeliveries_Tenant_Created
WHERE TenantId = ?1 AND (?2 IS NULL OR Status = ?2) AND (?3 IS NULL OR EventType = ?3) AND (?4 IS NULL OR EndpointName = ?4)
    AND (?5 IS NULL OR CreatedAt < ?5 OR (CreatedAt = ?5 AND DeliveryId < ?6))
ORDER BY CreatedAt DESC, DeliveryId DESC LIMIT ?7`,
	redeliver: `UPDATE WebhookDeliveries SET Status = 'pending', NextAttemptAt = ?3, RetryUntil = ?4, DeliveredAt = NULL
WHERE TenantId = ?1 AND DeliveryId = ?2 AND Status <> 'pending'`,
	purge: `DELETE FROM WebhookDeliveries WHERE rowid IN (SELECT rowid FROM WebhookDeliveries INDEXED BY IX_WebhookDeliveries_Delivered
WHERE Status = 'delivered' AND DeliveredAt < ?1 LIMIT ?2)`,
	oldestPending: `SELECT MIN(CreatedAt) FROM WebhookDeliveries INDEXED BY IX_WebhookDeliveries_Due WHERE Status = 'pending'`,
}
