package schema

// The SQL Server half of the project cannot be run here (no SQL Server, no Docker), so this
// linter is the one machine check it gets (TSQL.md, last section). It reads every T-SQL
// text, migrations/mssql/*.sql and each string constant of every internal/**/queries_mssql.go,
// and looks for SQLite dialect that leaked in and for T-SQL traps. It also reads
// migrations/sqlite/*.sql for the mirror leaks. Comments are dropped and string literals and
// quoted identifiers are never matched as words, so `-- LIMIT`, N'LIMIT' and [Limit] pass.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqllint"
	"github.com/ledger-dev/ledger/migrations/mssql"
	"github.com/ledger-dev/ledger/migrations/sqlite"
)

// ---------------------------------------------------------------------------------------
// Locating files

// repoRoot returns the directory holding go.mod, walking up from the package directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// sqlFiles returns the names of the .sql files of an embedded migration folder, sorted.
func sqlFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func readFS(t *testing.T, fsys fs.FS, name string) string {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mssqlTriggerTables returns the tables with triggers in migrations/mssql, plus Runs,
// whose guard trigger TSQL.md names.
func mssqlTriggerTables(t *testing.T) map[string]bool {
	t.Helper()
	var texts []string
	for _, name := range sqlFiles(t, mssql.FS) {
		texts = append(texts, readFS(t, mssql.FS, name))
	}
	tables := sqllint.TriggerTablesOf(texts...)
	tables["RUNS"] = true
	return tables
}

// ---------------------------------------------------------------------------------------
// Tests

func TestMSSQLMigrationsHaveNoDialectLeaks(t *testing.T) {
	triggers := mssqlTriggerTables(t)
	names := sqlFiles(t, mssql.FS)
	if len(names) == 0 {
		t.Fatal("no .sql files embedded in migrations/mssql")
	}
	for _, name := range names {
		for _, f := range sqllint.LintTSQL(readFS(t, mssql.FS, name), triggers) {
			t.Errorf("migrations/mssql/%s: %s", name, f)
		}
	}
}

func TestMSSQLQuerySetsHaveNoDialectLeaks(t *testing.T) {
	root := repoRoot(t)
	triggers := mssqlTriggerTables(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != filepath.Join(root, "internal") &&
			(strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "queries_mssql.go" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Log("no internal/**/queries_mssql.go yet: nothing to scan")
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := sqllint.SQLInGoSource(path, src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		rel, _ := filepath.Rel(root, path)
		for _, q := range texts {
			for _, f := range sqllint.LintTSQL(q.Text, triggers) {
				t.Errorf("%s:%d (SQL %s)", rel, q.Line, f)
			}
		}
	}
}

func TestSQLiteMigrationsHaveNoTSQLLeaks(t *testing.T) {
	names := sqlFiles(t, sqlite.FS)
	if len(names) == 0 {
		t.Fatal("no .sql files embedded in migrations/sqlite")
	}
	for _, name := range names {
		for _, f := range sqllint.LintSQLite(readFS(t, sqlite.FS, name)) {
			t.Errorf("migrations/sqlite/%s: %s", name, f)
		}
	}
}

var migrationName = regexp.MustCompile(`^(\d{6})_([a-z0-9_]+)\.(up|down)\.sql$`)

func TestMigrationFoldersInStep(t *testing.T) {
	ms, sq := sqlFiles(t, mssql.FS), sqlFiles(t, sqlite.FS)
	if strings.Join(ms, "\n") != strings.Join(sq, "\n") {
		t.Errorf("migrations/mssql and migrations/sqlite differ:\nmssql:  %v\nsqlite: %v", ms, sq)
	}
	// Every version has exactly one title, an up and a down, and versions run 1, 2, 3, ...
	titles := map[int]string{}
	dirs := map[int]map[string]bool{}
	for _, name := range ms {
		m := migrationName.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("migrations/mssql/%s: name is not NNNNNN_title.up|down.sql", name)
			continue
		}
		v, _ := strconv.Atoi(m[1])
		if prev, ok := titles[v]; ok && prev != m[2] {
			t.Errorf("version %d has two titles: %s and %s", v, prev, m[2])
		}
		titles[v] = m[2]
		if dirs[v] == nil {
			dirs[v] = map[string]bool{}
		}
		dirs[v][m[3]] = true
	}
	for v := 1; v <= len(titles); v++ {
		if _, ok := titles[v]; !ok {
			t.Errorf("migration version %d is missing: versions must run from 1 without gaps", v)
			continue
		}
		if !dirs[v]["up"] || !dirs[v]["down"] {
			t.Errorf("migration %06d_%s needs both an up and a down file", v, titles[v])
		}
	}
}

func TestTriggerTablesAreKnown(t *testing.T) {
	// The OUTPUT check is only as good as this list: the guard trigger must be found in
	// the migrations themselves, not only in the fallback.
	var texts []string
	for _, name := range sqlFiles(t, mssql.FS) {
		texts = append(texts, readFS(t, mssql.FS, name))
	}
	if got := sqllint.TriggerTablesOf(texts...); !got["RUNS"] {
		t.Errorf("triggerTablesOf found %v in migrations/mssql; want RUNS (TR_Runs_Guard)", got)
	}
}

func TestTSQLLinterCatchesLeaks(t *testing.T) {
	triggers := map[string]bool{"RUNS": true}
	bad := []struct{ name, sql, want string }{
		{"limit", "SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 LIMIT 1;", "LIMIT"},
		{"returning", "UPDATE dbo.Projects SET Active = 0 WHERE ProjectId = @p1 RETURNING Version;", "RETURNING"},
		{"on conflict", "INSERT INTO Tenants (TenantId) VALUES (@p1) ON CONFLICT DO NOTHING;", "ON CONFLICT"},
		{"insert or ignore", "INSERT OR IGNORE INTO Tenants (TenantId) VALUES (@p1);", "INSERT OR"},
		{"autoincrement", "CREATE TABLE t (Id INTEGER PRIMARY KEY AUTOINCREMENT);", "AUTOINCREMENT"},
		{"concat", "SELECT N'a' || N'b';", "||"},
		{"strftime", "SELECT strftime('%Y', 'now');", "strftime"},
		{"datetime function", "SELECT datetime('now');", "datetime(...)"},
		{"julianday", "SELECT julianday(DueAt) FROM Runs;", "julianday"},
		{"true literal", "SELECT 1 WHERE Active = TRUE;", "TRUE"},
		{"false literal", "UPDATE dbo.Projects SET Active = false;", "FALSE"},
		{"ifnull", "SELECT IFNULL(EndedAt, DueAt) FROM dbo.Runs;", "IFNULL"},
		{"go line", "CREATE TABLE t (a int);\nGO\nCREATE TABLE u (a int);", "GO is a client batch separator"},
		{"go with count", "SELECT 1;\n  go 2\n", "GO is a client batch separator"},
		{"trigger not first", "SET NOCOUNT ON;\nCREATE TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; END;", "CREATE TRIGGER must be the first"},
		{"function not first", "BEGIN TRAN;\nCREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x;", "CREATE FUNCTION must be the first"},
		{"create or alter view not first", "SELECT 1;\nCREATE OR ALTER VIEW dbo.v AS SELECT 1 AS x;", "CREATE VIEW must be the first"},
		{"procedure not first", "DROP PROCEDURE dbo.p;\nCREATE PROCEDURE dbo.p AS SELECT 1;", "CREATE PROCEDURE must be the first"},
		{"security policy not first", "DROP SECURITY POLICY dbo.P;\nCREATE SECURITY POLICY dbo.P ADD FILTER PREDICATE dbo.f(TenantId) ON dbo.Runs;", "CREATE SECURITY POLICY must be the first"},
		{"statement after security policy", "CREATE SECURITY POLICY dbo.P ADD FILTER PREDICATE dbo.f(TenantId) ON dbo.Runs WITH (STATE = ON);\nSELECT 1;", "statements after CREATE SECURITY POLICY"},
		{"two functions", "CREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x;\nCREATE FUNCTION dbo.g() RETURNS TABLE AS RETURN SELECT 1 AS x;", "must be the first"},
		{"update output without into", "UPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = @p1;", "OUTPUT without INTO"},
		{"bracketed table", "UPDATE [dbo].[Runs] SET [State] = 1 OUTPUT inserted.[Version] WHERE [RunId] = @p1;", "OUTPUT without INTO"},
		{"cte update output", ";WITH c AS (SELECT TOP (1) * FROM dbo.Runs WITH (UPDLOCK, READPAST, ROWLOCK) WHERE State = 0 ORDER BY DueAt)\nUPDATE c SET State = 1 OUTPUT inserted.RunId;", "OUTPUT without INTO"},
		{"insert output without into", "INSERT INTO dbo.Runs (RunId) OUTPUT inserted.Version VALUES (@p1);", "OUTPUT without INTO"},
		{"unterminated string", "SELECT N'abc", "unterminated"},
		{"leak inside exec", "BEGIN TRAN;\nEXEC(N'SELECT RunId FROM dbo.Runs LIMIT 1');\nCOMMIT;", "in EXEC(N'...'): LIMIT"},
		{"output inside exec", "EXEC(N'UPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = 1');", "in EXEC(N'...'): OUTPUT without INTO"},
		{"trigger not first inside exec", "EXEC(N'SET NOCOUNT ON; CREATE OR ALTER TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; END;');", "CREATE TRIGGER must be the first"},
		{"readpast alone", "DELETE TOP (100) FROM dbo.ConsoleSessions WITH (READPAST) WHERE TenantId = @p1;", "READPAST without READCOMMITTEDLOCK"},
		{"readpast with updlock only", "SELECT TOP (1) RunId FROM dbo.Runs WITH (UPDLOCK, READPAST, ROWLOCK) WHERE State = 0;", "READPAST without READCOMMITTEDLOCK"},
		{"readcommittedlock in another hint list", "SELECT r.RunId FROM dbo.Runs AS r WITH (READPAST) JOIN dbo.Projects AS p WITH (READCOMMITTEDLOCK) ON p.ProjectId = r.ProjectId;", "READPAST without READCOMMITTEDLOCK"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			got := sqllint.LintTSQL(c.sql, triggers)
			for _, f := range got {
				if strings.Contains(f.Msg, c.want) {
					return
				}
			}
			t.Errorf("sqllint.LintTSQL(%q) = %v; want a finding containing %q", c.sql, got, c.want)
		})
	}

	good := []struct{ name, sql string }{
		{"words in comments and strings", "-- LIMIT 1 RETURNING TRUE\n/* GO\n ON CONFLICT /* nested || */ */\nSELECT N'LIMIT 1 || TRUE' AS [Limit], 'GO' AS [True];"},
		{"output into", "DECLARE @t TABLE (RunId uniqueidentifier, Version binary(8));\nUPDATE dbo.Runs SET State = 1 OUTPUT inserted.RunId, inserted.Version INTO @t WHERE RunId = @p1;\nSELECT RunId, Version FROM @t;"},
		{"output on a table without trigger", "UPDATE dbo.Projects SET Active = 0 OUTPUT inserted.Version WHERE ProjectId = @p1;"},
		{"procedure output parameter", "EXEC dbo.p @Runs = @x OUTPUT;"},
		{"trigger first after comments", "-- guard\n/* more */\nCREATE TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; IF UPDATE(RunId) BEGIN THROW 50001, N'x', 1; END; END;"},
		{"wrapped in exec", "SET XACT_ABORT ON;\nBEGIN TRAN;\nEXEC(N'CREATE FUNCTION dbo.f() RETURNS TABLE AS RETURN SELECT 1 AS x');\nCOMMIT;"},
		{"time type and go as identifier part", "DECLARE @t time(3) = CAST(SYSUTCDATETIME() AS time(3)); SELECT GoLive, [GO] FROM dbo.x;"},
		{"top and offset fetch", "SELECT TOP (10) RunId FROM dbo.Runs WHERE TenantId = @p1 ORDER BY QueuedAt DESC OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY;"},
		{"alter table default", "ALTER TABLE dbo.x ADD CONSTRAINT DF_x DEFAULT (0) FOR y;"},
		{"readpast with readcommittedlock", "SELECT TOP (@p2) RunId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK) WHERE State = 1 ORDER BY LeasedUntil;"},
		{"create or alter trigger wrapped in exec", "BEGIN TRAN;\nEXEC(N'CREATE OR ALTER TRIGGER dbo.T ON dbo.Runs AFTER UPDATE AS BEGIN SET NOCOUNT ON; THROW 50001, N''x'', 1; END;');\nCOMMIT;"},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			if got := sqllint.LintTSQL(c.sql, triggers); len(got) != 0 {
				t.Errorf("sqllint.LintTSQL(%q) = %v; want no findings", c.sql, got)
			}
		})
	}
}

func TestSQLiteLinterCatchesLeaks(t *testing.T) {
	bad := []struct{ name, sql, want string }{
		{"top paren", "SELECT TOP (1) RunId FROM Runs;", "TOP is T-SQL"},
		{"top number", "SELECT TOP 1 RunId FROM Runs;", "TOP is T-SQL"},
		{"nvarchar", "CREATE TABLE t (a NVARCHAR(64) NOT NULL);", "NVARCHAR"},
		{"getdate", "UPDATE Runs SET DueAt = GETDATE();", "GETDATE"},
		{"sysutcdatetime", "UPDATE Runs SET DueAt = SYSUTCDATETIME();", "SYSUTCDATETIME"},
		{"output inserted", "UPDATE Runs SET State = 1 OUTPUT inserted.RunId WHERE RunId = ?;", "OUTPUT inserted"},
		{"n string", "SELECT N'x';", "N'...'"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			got := sqllint.LintSQLite(c.sql)
			for _, f := range got {
				if strings.Contains(f.Msg, c.want) {
					return
				}
			}
			t.Errorf("sqllint.LintSQLite(%q) = %v; want a finding containing %q", c.sql, got, c.want)
		})
	}
	good := "-- TOP (1) NVARCHAR GETDATE\nSELECT 'TOP (1)' AS [Top], Version FROM Runs WHERE State = 0 ORDER BY DueAt LIMIT 1 RETURNING *;\n/* /* not nested in SQLite */"
	if got := sqllint.LintSQLite(good); len(got) != 0 {
		t.Errorf("sqllint.LintSQLite(%q) = %v; want no findings", good, got)
	}
}

func TestGoQuerySetScan(t *testing.T) {
	// The queries_mssql.go path must find SQL in constants, joined across +, and skip
	// ordinary strings, or the scan of the real query sets would pass without reading.
	src := `package runs

import "fmt"

const claimRun = "WITH c AS (SELECT TOP (1) RunId FROM dbo.Runs WHERE State = 0) " +
	"UPDATE c SET State = 1 OUTPUT inserted.RunId;"

var queries = struct{ Get, List string }{
	Get:  ` + "`SELECT RunId FROM dbo.Runs WHERE RunId = @p1 LIMIT 1`" + `,
	List: "SELECT RunId FROM dbo.Runs WHERE TenantId = @p1 ORDER BY QueuedAt DESC",
}

var errNotSQL = fmt.Errorf("set lease: %w limit reached, true story", nil)
`
	texts, err := sqllint.SQLInGoSource("queries_mssql.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 3 {
		t.Fatalf("sqlInGoSource found %d SQL texts, want 3: %+v", len(texts), texts)
	}
	if !strings.Contains(texts[0].Text, "OUTPUT inserted.RunId;") || !strings.HasPrefix(texts[0].Text, "WITH c AS") {
		t.Errorf("the concatenated constant was not joined: %q", texts[0].Text)
	}
	var all []string
	for _, q := range texts {
		for _, f := range sqllint.LintTSQL(q.Text, map[string]bool{"RUNS": true}) {
			all = append(all, f.Msg)
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"OUTPUT without INTO", "LIMIT"} {
		if !strings.Contains(joined, want) {
			t.Errorf("findings %q lack %q", all, want)
		}
	}
	if len(all) != 2 {
		t.Errorf("got %d findings, want 2: %q", len(all), all)
	}
}

// Every store with a SQL Server query set compares its registered sets, every dialect's with
// every other's, in its own tests (sqllint.CompareQuerySets): with SQL Server absent from
// CI, that comparison is what catches a dialect drifting, so a new store cannot leave it out.
func TestEveryQuerySetIsCompared(t *testing.T) {
	root := repoRoot(t)
	dirs, err := filepath.Glob(filepath.Join(root, "internal", "*", "queries_mssql.go"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no queries_mssql.go found under internal/: %v", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		found := false
		for _, tf := range tests {
			src, err := os.ReadFile(tf)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "sqllint.CompareQuerySets(t, querySets.All())") {
				found = true
				break
			}
		}
		if !found {
			rel, _ := filepath.Rel(root, dir)
			t.Errorf("%s has a SQL Server query set but no test calls sqllint.CompareQuerySets(t, querySets.All())", rel)
		}
	}
}

// TestMSSQLIndexBuildsAreGuardedWhereHandBuildsAreAdvised: a migration that tells an
// operator to create its indexes by hand first checks for each (Msg 1913 would leave its
// version dirty), and builds each in a statement of its own, not in one transaction that
// holds every table's locks until the last build ends (issue 26 item 4).
func TestMSSQLIndexBuildsAreGuardedWhereHandBuildsAreAdvised(t *testing.T) {
	guarded := regexp.MustCompile(`(?s)IF NOT EXISTS \(SELECT 1 FROM sys\.indexes WHERE object_id = OBJECT_ID\(N'([^']+)'\) AND name = N'([^']+)'\)\s+CREATE (?:UNIQUE )?INDEX \[([^\]]+)\] ON \[dbo\]\.\[([^\]]+)\]`)
	checked := 0
	for _, name := range sqlFiles(t, mssql.FS) {
		text := readFS(t, mssql.FS, name)
		if !strings.HasSuffix(name, ".up.sql") || !strings.Contains(strings.ToLower(text), "by hand") {
			continue
		}
		checked++
		text = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(text, "")
		builds := regexp.MustCompile(`CREATE (?:UNIQUE )?INDEX`).FindAllStringIndex(text, -1)
		ok := guarded.FindAllStringSubmatch(text, -1)
		if len(ok) != len(builds) {
			t.Errorf("%s: %d of %d index builds are guarded by an existence check on sys.indexes", name, len(ok), len(builds))
		}
		for _, m := range ok {
			if m[1] != "dbo."+m[4] || m[2] != m[3] {
				t.Errorf("%s: the guard checks %s on %s, the build makes %s on dbo.%s", name, m[2], m[1], m[3], m[4])
			}
		}
		if len(builds) > 1 && regexp.MustCompile(`(?i)BEGIN TRAN`).MatchString(text) {
			t.Errorf("%s: %d index builds in one transaction: build each in its own statement", name, len(builds))
		}
	}
	if checked < 2 {
		t.Errorf("found %d migrations advising a hand build; want at least 16 and 18", checked)
	}
}
