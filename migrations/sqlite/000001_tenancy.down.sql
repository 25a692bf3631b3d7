DROP TABLE ApiKeys;
DROP TABLE Tenants;
DROP TABLE RowVersionCounter;
