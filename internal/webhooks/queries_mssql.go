package webhooks

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set of the webhook store. Shared rules: docs/tsql-notes.md; a
// statement's comment says what is particular to it. Neither table has a trigger.
// PK_WebhookEndpoints (TenantId, Name) and PK_WebhookDeliveries (TenantId, DeliveryId) are
// clustered.

const mssqlEndpointCols = `TenantId, Name, Url, Events, Active, Description, Secret, PreviousSecret, PreviousSecretUntil,
    DisabledAt, CreatedAt, UpdatedAt, Version`

const mssqlDeliveryCols = `TenantId, DeliveryId, EndpointName, EventType, Payload, Status, Attempts, CreatedAt,
    NextAttemptAt, RetryUntil, LastAttemptAt, LastStatusCode, LastError, DeliveredAt`

var mssqlQueries = queries{
	// getEndpoint: PK seek. 0 rows: no such endpoint.
	getEndpoint: `SELECT ` + mssqlEndpointCols + ` FROM dbo.WebhookEndpoints WHERE TenantId = @p1 AND Name = @p2;`,
	// insertEndpoint: after getEndpoint found no row; two creates: the second gets 2627 ->
	// ConflictError (Put answers precondition_required).
	insertEndpoint: `INSERT INTO dbo.WebhookEndpoints (TenantId, Name, Url, Events, Active, Description, Secret, CreatedAt, UpdatedAt)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p8);`,
	// updateEndpoint: conditional on the version If-Match matched (0 rows: precondition_failed).
	updateEndpoint: `UPDATE dbo.WebhookEndpoints SET Url = @p3, Events = @p4, Active = @p5, Description = @p6, UpdatedAt = @p7,
    DisabledAt = CASE WHEN @p5 = 1 THEN NULL ELSE DisabledAt END
WHERE TenantId = @p1 AND Name = @p2 AND Version = @p8;`,
	// deleteEndpoint: PK seek; its deliveries stay (no foreign key) and fail at their next try.
	deleteEndpoint: `DELETE FROM dbo.WebhookEndpoints WHERE TenantId = @p1 AND Name = @p2;`,
	// rotateSecret: PK seek; 0 rows: no such endpoint.
	rotateSecret: `UPDATE dbo.WebhookEndpoints SET PreviousSecret = Secret, PreviousSecretUntil = @p5, Secret = @p3, UpdatedAt = @p4
WHERE TenantId = @p1 AND Name = @p2;`,
	// listEndpoints: PK range after @p2, TOP (@p3).
	listEndpoints: `SELECT TOP (@p3) ` + mssqlEndpointCols + ` FROM dbo.WebhookEndpoints WHERE TenantId = @p1 AND Name > @p2 ORDER BY Name
OPTION (MAXDOP 1);`,
	// countEndpoints: PK range of the tenant, at most @p2 rows read.
	countEndpoints: `SELECT COUNT(*) FROM (SELECT TOP (@p2) 1 AS x FROM dbo.WebhookEndpoints WHERE TenantId = @p1) AS e
OPTION (MAXDOP 1);`,
	// subscribed: PK range of the tenant (a few rows: the endpoint cap), TOP (@p2).
	subscribed: `SELECT TOP (@p2) Name, Events FROM dbo.WebhookEndpoints WHERE TenantId = @p1 AND Active = 1 ORDER BY Name
OPTION (MAXDOP 1);`,
	// disable: PK seek; 0 rows: already inactive or deleted.
	disable: `UPDATE dbo.WebhookEndpoints SET Active = 0, DisabledAt = @p3, UpdatedAt = @p3
WHERE TenantId = @p1 AND Name = @p2 AND Active = 1;`,
	// insertDelivery: a new key (COMB id); Payload goes as nvarchar(max).
	insertDelivery: `INSERT INTO dbo.WebhookDeliveries (TenantId, DeliveryId, EndpointName, EventType, Payload, Status, Attempts,
    CreatedAt, NextAttemptAt, RetryUntil)
VALUES (@p1, @p2, @p3, @p4, @p5, N'pending', 0, @p6, @p6, @p7);`,
	// due: maintenance scope, IX_WebhookDeliveries_Due range (literal filter repeated);
	// READPAST skips rows another replica is leasing (its lease statement re-checks anyway).
	// @p3's tenants compare with the BIN2 column: the COLLATE settles the JSON value's
	// collation.
	due: `SELECT TOP (@p2) TenantId, DeliveryId, Attempts FROM dbo.WebhookDeliveries WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE Status = N'pending' AND NextAttemptAt <= @p1
    AND TenantId NOT IN (SELECT CAST(j.[value] AS nvarchar(64)) COLLATE Latin1_General_100_BIN2 FROM OPENJSON(@p3) AS j)
ORDER BY NextAttemptAt
OPTION (MAXDOP 1);`,
	// lease: PK seek; the conditions make it a compare-and-set: of two replicas that read the
	// row due, one changes it and the other gets 0 rows (it waited on the first's lock, then
	// re-read Attempts and NextAttemptAt).
	lease: `UPDATE dbo.WebhookDeliveries SET Attempts = Attempts + 1, NextAttemptAt = @p5, LastAttemptAt = @p4
WHERE TenantId = @p1 AND DeliveryId = @p2 AND Status = N'pending' AND Attempts = @p3 AND NextAttemptAt <= @p4;`,
	// record: PK seek; 0 rows: the lease was lost (another replica leased the row again).
	record: `UPDATE dbo.WebhookDeliveries SET Status = @p4, NextAttemptAt = @p5, LastStatusCode = @p6, LastError = @p7, DeliveredAt = @p8
WHERE TenantId = @p1 AND DeliveryId = @p2 AND Attempts = @p3 AND Status = N'pending';`,
	// getDelivery: PK seek.
	getDelivery: `SELECT ` + mssqlDeliveryCols + ` FROM dbo.WebhookDeliveries WHERE TenantId = @p1 AND DeliveryId = @p2;`,
	// listDeliveries: IX_WebhookDeliveries_Tenant_Created backwards from the cursor, filters
	// residual, TOP (@p7).
	listDeliveries: `SELECT TOP (@p7) ` + mssqlDeliveryCols + ` FROM dbo.WebhookDeliveries
WHERE TenantId = @p1 AND (@p2 IS NULL OR Status = @p2) AND (@p3 IS NULL OR EventType = @p3) AND (@p4 IS NULL OR EndpointName = @p4)
    AND (@p5 IS NULL OR CreatedAt < @p5 OR (CreatedAt = @p5 AND DeliveryId < @p6))
ORDER BY CreatedAt DESC, DeliveryId DESC
OPTION (MAXDOP 1);`,
	// redeliver: PK seek; 0 rows: missing, or still pending (Redeliver tells which).
	redeliver: `UPDATE dbo.WebhookDeliveries SET Status = N'pending', NextAttemptAt = @p3, RetryUntil = @p4, DeliveredAt = NULL
WHERE TenantId = @p1 AND DeliveryId = @p2 AND Status <> N'pending';`,
	// purge: maintenance scope, one autocommit batch of IX_WebhookDeliveries_Delivered.
	purge: `DELETE TOP (@p2) FROM dbo.WebhookDeliveries WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE Status = N'delivered' AND DeliveredAt < @p1
OPTION (MAXDOP 1);`,
	// oldestPending: maintenance scope, the filtered IX_WebhookDeliveries_Due (pending rows
	// only, the backlog).
	oldestPending: `SELECT MIN(CreatedAt) FROM dbo.WebhookDeliveries WHERE Status = N'pending'
OPTION (MAXDOP 1);`,
}
