-- migration: additive
-- Additive though it drops an index: no statement of a binary before it names the index
-- (INDEXED BY), so such a binary works, its reads planned on the longer index.
-- IX_Attempts_Tenant_State (TenantId, State) is a prefix of IX_Attempts_Tenant_State_Ended
-- (TenantId, State, EndedAt, 000018): every seek the shorter index serves, the longer one
-- serves with the same range, so on SQLite it only cost each attempt's insert and state
-- change an index entry to write (1.6% of a run's cycle, BENCHMARKS.md). SQL Server keeps
-- it: it is the seed's, and there the longer index carries INCLUDE columns.
-- internal/schema's parity test lists this omission with its reason.
DROP INDEX IX_Attempts_Tenant_State;
