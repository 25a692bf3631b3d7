package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// The checks of the embedded database: the file, WAL, the durability setting, foreign
// keys, the schema. The pragmas run on the writer's connection, which is the one whose
// settings decide what a commit promises.
var sqliteChecks = []checker{
	probe{name: "database-file", required: true, do: func(_ context.Context, db *sqldb.DB, _ Purpose) Result {
		return sqliteFileCheck(statFile(db.File()))
	}},
	check[journalRow]{
		name: "journal-mode", required: true, writer: true,
		query: `PRAGMA journal_mode`,
		eval: func(rows []journalRow, _ Purpose) Result {
			if len(rows) != 1 {
				return evalJournalMode("")
			}
			return evalJournalMode(rows[0].Mode)
		},
	},
	check[synchronousRow]{
		name: "durability", required: true, writer: true,
		query: `PRAGMA synchronous`,
		eval: func(rows []synchronousRow, _ Purpose) Result {
			if len(rows) != 1 {
				return evalSynchronous(-1)
			}
			return evalSynchronous(rows[0].Level)
		},
	},
	check[foreignKeysRow]{
		name: "foreign-keys", required: true, writer: true,
		query: `PRAGMA foreign_keys`,
		eval: func(rows []foreignKeysRow, _ Purpose) Result {
			return evalForeignKeys(len(rows) == 1 && rows[0].On == 1)
		},
	},
	schemaCheck,
}

type journalRow struct {
	Mode string `db:"journal_mode"`
}

type synchronousRow struct {
	Level int `db:"synchronous"`
}

type foreignKeysRow struct {
	On int `db:"foreign_keys"`
}

func sqliteFileCheck(st fileState) Result {
	switch {
	case st.err != nil:
		return Result{Status: StatusFail, Detail: fmt.Sprintf("cannot read %s: %v", st.path, st.err),
			Fix: "give the service's user access to the file and its directory"}
	case !st.exists:
		return Result{Status: StatusFail, Detail: fmt.Sprintf("no database file at %s", st.path),
			Fix: "check --db / LEDGER_DB; `ledger serve` or `ledger migrate up` creates a new database there"}
	case !st.regular:
		return Result{Status: StatusFail, Detail: fmt.Sprintf("%s is not a regular file", st.path),
			Fix: "point --db / LEDGER_DB at the database file"}
	case !st.writable:
		return Result{Status: StatusFail, Detail: fmt.Sprintf("%s is not writable by this user", st.path),
			Fix: "give the service's user write access to the file"}
	case !st.dirWritable:
		return Result{Status: StatusFail, Detail: fmt.Sprintf("the directory of %s is not writable: WAL needs its -wal and -shm files beside the database", st.path),
			Fix: "give the service's user write access to the directory"}
	}
	return Result{Status: StatusOK, Detail: fmt.Sprintf("%s, %d bytes, writable", st.path, st.size)}
}

func evalJournalMode(mode string) Result {
	if strings.EqualFold(mode, "wal") {
		return Result{Status: StatusOK, Detail: "WAL: readers never block the writer"}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("journal mode %q, not WAL: readers and the writer block each other and several serve processes cannot share the file", mode),
		Fix:    "stop every process using the file, then run `sqlite3 FILE 'PRAGMA journal_mode=WAL;'` (ledger sets WAL when it opens a file, so another tool changed it)"}
}

// evalSynchronous reports PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA.
func evalSynchronous(level int) Result {
	switch level {
	case 1:
		return Result{Status: StatusOK,
			Detail: "synchronous=NORMAL (the default): a commit survives a crash of the process, not of the OS or a power loss (LEDGER_SQLITE_SYNC=full for that)"}
	case 2, 3:
		return Result{Status: StatusOK, Detail: "synchronous=FULL: a commit survives a crash of the process, of the OS and a power loss"}
	}
	return Result{Status: StatusFail,
		Detail: fmt.Sprintf("synchronous=%d: a crash can lose or corrupt committed writes", level),
		Fix:    "set LEDGER_SQLITE_SYNC (or --sqlite-sync) to normal or full"}
}

func evalForeignKeys(on bool) Result {
	if on {
		return Result{Status: StatusOK, Detail: "enforced"}
	}
	return Result{Status: StatusFail, Detail: "foreign keys are not enforced on this connection",
		Fix: "open the database through ledger, which turns them on for every connection"}
}
