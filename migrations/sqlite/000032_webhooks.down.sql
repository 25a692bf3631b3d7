DROP TABLE WebhookDeliveries;
DROP TABLE WebhookEndpoints;
