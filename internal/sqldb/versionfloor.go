package sqldb

import (
	"context"
	"fmt"
)

// VersionsPerMilli is how many row versions the embedded database may hand out per
// millisecond of the clock without outrunning the floor RaiseVersionFloor sets: a million
// writes a second, well past what one SQLite writer commits.
const VersionsPerMilli = 1024

// RaiseVersionFloor raises the embedded database's row-version counter to at least the
// clock's floor (Unix milliseconds times VersionsPerMilli), and returns the counter before
// and after. serve calls it at every start.
//
// Why: the counter lives in the file, so a backup restored over it would go back to the
// backup's value, and the versions handed out after the backup was taken (ETags a consumer
// keeps, changedSince positions) would be handed out again to other states. Raised at
// every start to the floor, the counter is always past every version any earlier process
// handed out, restore or not, provided the clock did not go back and fewer than
// VersionsPerMilli versions were made per millisecond on average since the start before:
// each start's floor is then above what the process before it reached. The floor stays
// below 2^53 until the year 2248, so a version read as a JavaScript number stays exact.
//
// SQL Server keeps rowversion in the engine, which no statement sets: a restored SQL
// Server database continues from the backup's value (docs/operators.md says what a
// consumer does then). There this does nothing.
func (db *DB) RaiseVersionFloor(ctx context.Context) (from, to RowVersion, err error) {
	if !db.Dialect.EmulatesRowVersion() {
		return 0, 0, nil
	}
	err = db.Write(ctx, MaintenanceScope(), func(tx *Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var v int64
		if err := tx.GetContext(ctx, &v, `SELECT Value FROM RowVersionCounter WHERE Id = 1`); err != nil {
			return fmt.Errorf("read the row-version counter: %w", err)
		}
		from, to = RowVersion(v), RowVersion(v)
		if floor := now.UnixMilli() * VersionsPerMilli; floor > v {
			if _, err := tx.ExecContext(ctx, `UPDATE RowVersionCounter SET Value = ? WHERE Id = 1`, floor); err != nil {
				return fmt.Errorf("raise the row-version counter: %w", err)
			}
			to = RowVersion(floor)
		}
		return nil
	})
	return from, to, err
}
