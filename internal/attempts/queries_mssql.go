package attempts

var mssqlQueries = queries{
	insert: `INSERT INTO dbo.ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, EnvironmentId, LeaseId,
    FencingToken, SnapshotId, ReleaseId, AgentId, ModelProfileId, State, Phase, CorrectionCount, MaxCorrections,
    StartedAt, AdapterVersion)
VALUES (@p1, @p2, @p3, @p4, @p5, @p6, @p7, @p8, @p9, @p10, @p11, @p12, @p13, @p14, 0, @p15, @p16, @p17);`,
	get: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WHERE TenantId = @p1 AND AttemptId = @p2;`,
	// UPDLOCK holds the attempt row until commit: the first lock of attempt-then-run.
	lock: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WITH (UPDLOCK, ROWLOCK)
WHERE TenantId = @p1 AND AttemptId = @p2;`,
	lockRunning: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WITH (UPDLOCK, ROWLOCK)
WHERE RunId = @p1 AND FencingToken = @p2 AND State = 0;`,
	end: `UPDATE dbo.ExecutionAttempts SET State = @p2, EndedAt = @p3, OutcomeHash = COALESCE(@p4, OutcomeHash)
WHERE AttemptId = @p1 AND State = 0;`,
	observeCancel: `UPDATE dbo.ExecutionAttempts SET CancellationObservedAt = @p2
WHERE AttemptId = @p1 AND CancellationObservedAt IS NULL;`,
	listByRun: `SELECT ` + columns + ` FROM dbo.ExecutionAttempts WHERE TenantId = @p1 AND RunId = @p2 ORDER BY FencingToken;`,
	// Both run under the fence's locks (attempt, then run): a PK seek of a row already
	// U-locked by this transaction; 0 rows means the attempt ended (checked by the caller).
	patch: `UPDATE dbo.ExecutionAttempts SET Phase = COALESCE(@p2, Phase), CorrectionCount = CorrectionCount + @p3,
    ContextSnapshotRef = COALESCE(@p4, ContextSnapshotRef)
WHERE AttemptId = @p1 AND State = 0;`,
	setCheckpoint: `UPDATE dbo.ExecutionAttempts SET LastCheckpointId = @p2 WHERE AttemptId = @p1;`,
}
