package feed

import "github.com/ledger-dev/ledger/internal/sqldb"

func init() { querySets.Register(sqldb.SQLServerName, &mssqlQueries) }

// The SQL Server query set. FeedProjectors holds no tenant data and is not in the security
// policy; the runner reads and writes it in maintenance scope.
var mssqlQueries = queries{
	// Reading check: the existence test and the insert are one statement; two replicas that
	// both find no row race on the insert, and the loser's PK_FeedProjectors violation (2627)
	// rolls its step back, to be tried again: only a projector's very first step can meet it.
	// UPDLOCK, HOLDLOCK on the probe makes the loser wait instead, so the race is closed.
	ensure: `INSERT INTO dbo.FeedProjectors (Name, Position, UpdatedAt)
SELECT @p1, 0x0000000000000000, @p2
WHERE NOT EXISTS (SELECT 1 FROM dbo.FeedProjectors WITH (UPDLOCK, HOLDLOCK) WHERE Name = @p1);`,

	// Reading check: a PK seek; the UPDATE's exclusive row lock is held until the step
	// commits, so a second replica's lease UPDATE waits on it and then finds Holder changed
	// and the lease live (0 rows): never two steps of one projector at once.
	lease: `UPDATE dbo.FeedProjectors SET Holder = @p2, LeaseUntil = @p4
WHERE Name = @p1 AND (Holder = @p2 OR Holder IS NULL OR LeaseUntil IS NULL OR LeaseUntil < @p3);`,

	// Reading check: a PK seek of the row this transaction already holds.
	position: `SELECT Position FROM dbo.FeedProjectors WHERE Name = @p1;`,

	// Reading check: MIN_ACTIVE_ROWVERSION() is the lowest rowversion of any open
	// transaction (or the next to be handed out): every row version below it is committed.
	// Read in its own statement before the projector reads rows, as history's changesCap.
	ceiling: `SELECT MIN_ACTIVE_ROWVERSION();`,

	// Reading check: a PK seek of the held row; Position is binary(8) as rowversion is.
	advance: `UPDATE dbo.FeedProjectors SET Position = @p2, CaughtUpAt = COALESCE(@p3, CaughtUpAt), UpdatedAt = @p4
WHERE Name = @p1;`,

	// Reading check: a PK seek; the position and holder conditions make a replica whose
	// lease another took over store nothing (0 rows). @p5 is binary(8).
	advanceFrom: `UPDATE dbo.FeedProjectors SET Position = @p2, CaughtUpAt = COALESCE(@p3, CaughtUpAt), UpdatedAt = @p4
WHERE Name = @p1 AND Position = @p5 AND Holder = @p6;`,

	// Reading check: one row per projector (a handful); the clustered index in order.
	statuses: `SELECT Name, Position, CaughtUpAt FROM dbo.FeedProjectors ORDER BY Name OPTION (MAXDOP 1);`,
}
