-- migration: additive
-- Two indexes of ExecutionAttempts keep only the rows their readers can ask for, so an
-- attempt's start or end writes one index entry fewer each:
-- IX_Attempts_Release (ReleaseId, AdapterVersion, State) is read by one statement, the
-- release's running attempts (internal/releases, `State = 0` as a literal): filtered to
-- State = 0, an attempt's end deletes its entry and writes none, and ended attempts (nearly
-- all of them) hold no entry.
-- IX_Attempts_Tenant_State_Ended (TenantId, State, EndedAt) is read by history's ended
-- lists, the insights of ended attempts and lost leases, and the console overview's lost
-- count, each with a range `EndedAt >= ?` (which implies EndedAt IS NOT NULL, how SQLite
-- decides a partial index is usable): filtered to EndedAt IS NOT NULL, an attempt's start
-- writes no entry, and its end writes one instead of moving one. No statement seeks it for a
-- running attempt (the fence seeks IX_Attempts_Run_Step, migrations/sqlite 000019's note).
-- Priced by callgrind on BenchmarkCycle (docs/perf/issue-35.md): 54k instructions of a
-- serial cycle of 2,411k.
-- SQL Server keeps both whole (migrations/mssql 000039 changes nothing): its statements pin
-- them by INDEX hints with parameterized ranges, and whether its optimiser matches a
-- filtered index to those cannot be checked without a server.
-- Additive: an older binary's statements that name these indexes (INDEXED BY) carry the same
-- literal or range, which the partial indexes serve.
DROP INDEX IX_Attempts_Release;
CREATE INDEX IX_Attempts_Release ON ExecutionAttempts (ReleaseId, AdapterVersion, State) WHERE State = 0;
DROP INDEX IX_Attempts_Tenant_State_Ended;
CREATE INDEX IX_Attempts_Tenant_State_Ended ON ExecutionAttempts (TenantId, State, EndedAt) WHERE EndedAt IS NOT NULL;
