package sqllint

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestComparePairFindsDrift(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, mssql, sqlite, want string }{
		// The decisions listing that lost its TOP in a rewrite (issue 18 item 1).
		{"lost top", "SELECT d.Id FROM dbo.D AS d WHERE d.TenantId = @p1 AND (@p2 IS NULL OR d.Id > @p2) ORDER BY d.Id OPTION (RECOMPILE, MAXDOP 1);",
			"SELECT d.Id FROM D AS d WHERE d.TenantId = ?1 AND (?2 IS NULL OR d.Id > ?2) ORDER BY d.Id LIMIT ?3",
			"placeholders differ"},
		{"unbounded on one side", "SELECT Id FROM dbo.D WHERE TenantId = @p1 AND @p2 > 0 ORDER BY Id OPTION (MAXDOP 1);",
			"SELECT Id FROM D WHERE TenantId = ?1 ORDER BY Id LIMIT ?2", "SQLite bounds the rows"},
		{"bounded by another argument", "SELECT TOP (@p2) Id FROM dbo.D WHERE TenantId = @p1 AND Id > @p3 ORDER BY Id OPTION (MAXDOP 1);",
			"SELECT Id FROM D WHERE TenantId = ?1 AND Id > ?3 AND ?2 > 0 ORDER BY Id LIMIT ?3", "bounds differ"},
		{"range without maxdop", "SELECT TOP (@p2) Id FROM dbo.D WHERE TenantId = @p1 ORDER BY Id;",
			"SELECT Id FROM D WHERE TenantId = ?1 ORDER BY Id LIMIT ?2", "lacks OPTION (MAXDOP 1): TOP (@p2)"},
		{"aggregate without maxdop", "SELECT COUNT_BIG(*) FROM dbo.Runs WHERE TenantId = @p1 AND State = 0;",
			"SELECT COUNT(*) FROM Runs WHERE TenantId = ?1 AND State = 0", "aggregate COUNT_BIG"},
		{"group by without maxdop", "SELECT ProjectId, COUNT_BIG(*) AS n FROM dbo.Runs WHERE TenantId = @p1 GROUP BY ProjectId;",
			"SELECT ProjectId, COUNT(*) AS n FROM Runs WHERE TenantId = ?1 GROUP BY ProjectId", "MAXDOP"},
		{"fetch without maxdop", "SELECT Id FROM dbo.D WHERE TenantId = @p1 ORDER BY Id OFFSET 0 ROWS FETCH NEXT @p2 ROWS ONLY;",
			"SELECT Id FROM D WHERE TenantId = ?1 ORDER BY Id LIMIT ?2", "MAXDOP"},
		// tenancy's liveKeyIDs before issue 26 item 6: a plain WHERE with no argument scans.
		{"filter scan without maxdop", "SELECT KeyId FROM dbo.ApiKeys WHERE RevokedAt IS NULL;",
			"SELECT KeyId FROM ApiKeys WHERE RevokedAt IS NULL", "compares no column with an argument"},
		{"literal filter without maxdop", "SELECT RunId FROM dbo.Runs WHERE State = 1 AND LeasedUntil IS NOT NULL;",
			"SELECT RunId FROM Runs WHERE State = 1 AND LeasedUntil IS NOT NULL", "reads a range (a scan)"},
		{"no where without maxdop", "SELECT KeyId FROM dbo.ApiKeys;", "SELECT KeyId FROM ApiKeys", "without WHERE reads it all"},
	}
	for _, c := range cases {
		got := strings.Join(ComparePair(c.mssql, c.sqlite), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: ComparePair = %q; want a finding containing %q", c.name, got, c.want)
		}
	}
	good := []struct{ name, mssql, sqlite string }{
		{"key seek", "SELECT Id FROM dbo.D WHERE TenantId = @p1 AND Id = @p2;", "SELECT Id FROM D WHERE TenantId = ?1 AND Id = ?2"},
		{"top one seek", "SELECT TOP (1) Phase FROM dbo.D WHERE AttemptId = @p2 AND TenantId = @p1 ORDER BY At DESC;",
			"SELECT Phase FROM D WHERE AttemptId = ?2 AND TenantId = ?1 ORDER BY At DESC LIMIT 1"},
		{"bounded list", "SELECT TOP (@p3) Id FROM dbo.D WHERE TenantId = @p1 AND Id > @p2 ORDER BY Id OPTION (RECOMPILE, MAXDOP 1);",
			"SELECT Id FROM D WHERE TenantId = ?1 AND Id > ?2 ORDER BY Id LIMIT ?3"},
		{"filter scan with maxdop", "SELECT KeyId FROM dbo.ApiKeys WHERE RevokedAt IS NULL OPTION (MAXDOP 1);",
			"SELECT KeyId FROM ApiKeys WHERE RevokedAt IS NULL"},
		{"argument on the left", "SELECT Id FROM dbo.D WHERE @p1 = TenantId AND Id = @p2;", "SELECT Id FROM D WHERE ?1 = TenantId AND Id = ?2"},
		{"no table", "SELECT CAST(SYSUTCDATETIME() AS datetimeoffset(3)) AS Now;", "SELECT strftime('%Y') AS Now"},
		{"placeholders in comments and strings do not count", "-- @p9\nSELECT N'@p8' AS x FROM dbo.D WHERE Id = @p1;", "SELECT '?8' AS x FROM D WHERE Id = ?1"},
	}
	for _, c := range good {
		if got := ComparePair(c.mssql, c.sqlite); len(got) != 0 {
			t.Errorf("%s: ComparePair = %q; want none", c.name, got)
		}
	}
}

func TestCompareQuerySetsReadsEveryField(t *testing.T) {
	t.Parallel()
	type set struct {
		get  string
		list []string
		only string `sqllint:"optional"` // one dialect needs no statement
	}
	ms := set{get: "SELECT 1 FROM dbo.D WHERE Id = @p1;", list: []string{"SELECT TOP (@p2) Id FROM dbo.D WHERE TenantId = @p1 ORDER BY Id;"}, only: "EXEC x @p1;"}
	lite := set{get: "SELECT 1 FROM D WHERE Id = ?1", list: []string{"SELECT Id FROM D WHERE TenantId = ?1 ORDER BY Id LIMIT ?2"}}
	rec := &recorder{TB: t}
	CompareQuerySets(rec, map[string]*set{"sqlserver": &ms, "sqlite": &lite})
	if len(rec.errs) != 1 || !strings.HasPrefix(rec.errs[0], "list: ") || !strings.Contains(rec.errs[0], "MAXDOP") {
		t.Errorf("CompareQuerySets reported %q; want one finding, on list's missing MAXDOP", rec.errs)
	}
}

// thirdSet is a store's query set with a statement of each kind the comparison reads.
type thirdSet struct {
	get  string
	list []string
	lock string `sqllint:"optional"`
}

var (
	mssqlThird = thirdSet{get: "SELECT Name FROM dbo.D WHERE TenantId = @p1 AND Id = @p2;",
		list: []string{"SELECT TOP (@p3) Id FROM dbo.D WHERE TenantId = @p1 AND Id > @p2 ORDER BY Id OPTION (MAXDOP 1);"},
		lock: "EXEC sp_getapplock @Resource = @p1, @LockMode = 'Exclusive';"}
	sqliteThird = thirdSet{get: "SELECT Name FROM D WHERE TenantId = ?1 AND Id = ?2",
		list: []string{"SELECT Id FROM D WHERE TenantId = ?1 AND Id > ?2 ORDER BY Id LIMIT ?3"}}
)

// TestCompareQuerySetsComparesEveryDialect: a third dialect's set (written like SQLite's,
// read through a syntax of its own) is compared with each of the others with no edit to
// the comparison's callers: a statement it leaves out, a parameter that drifts and a lost
// bound each fail; a set that agrees passes; a dialect the linter cannot read is refused.
func TestCompareQuerySetsComparesEveryDialect(t *testing.T) {
	t.Parallel()
	syn := map[string]syntax{"third": syntaxes["sqlite"]}
	for name, sx := range syntaxes {
		syn[name] = sx
	}
	third := syn["third"]
	third.title = "Third"
	syn["third"] = third
	cases := []struct {
		name  string
		third thirdSet
		want  []string // each a finding's start; none when empty
	}{
		{"agrees", sqliteThird, nil},
		{"missing statement", thirdSet{list: sqliteThird.list}, []string{"get: empty in [third], filled in [sqlite sqlserver]"}},
		{"drifting parameter", thirdSet{get: "SELECT Name FROM D WHERE TenantId = ?1 AND Id = ?3", list: sqliteThird.list},
			[]string{"get: placeholders differ: SQLite uses [p1 p2], Third [p1 p3]", "get: placeholders differ: SQL Server uses [p1 p2], Third [p1 p3]"}},
		{"lost bound", thirdSet{get: sqliteThird.get, list: []string{"SELECT Id FROM D WHERE TenantId = ?1 AND Id > ?2 AND ?3 > 0 ORDER BY Id"}},
			[]string{"list: SQLite bounds the rows ([p3]), Third does not (no LIMIT)", "list: SQL Server bounds the rows ([p3]), Third does not (no LIMIT)"}},
	}
	for _, c := range cases {
		sets := map[string]reflect.Value{"sqlserver": reflect.ValueOf(mssqlThird), "sqlite": reflect.ValueOf(sqliteThird), "third": reflect.ValueOf(c.third)}
		got := compareSets(sets, syn)
		if len(got) != len(c.want) {
			t.Errorf("%s: compareSets = %q; want %d findings %q", c.name, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%s: finding %d = %q; want it to start %q", c.name, i, got[i], w)
			}
		}
	}
	sets := map[string]reflect.Value{"sqlite": reflect.ValueOf(sqliteThird), "third": reflect.ValueOf(sqliteThird)}
	if got := strings.Join(compareSets(sets, syntaxes), "\n"); !strings.Contains(got, `no reading of the "third" dialect's SQL`) {
		t.Errorf("compareSets with a dialect sqllint cannot read = %q; want it refused by name", got)
	}
}

// TestCompareQuerySetsWantsTwoSets: a package whose second dialect forgot to register has
// nothing to compare, which must not pass as agreement.
func TestCompareQuerySetsWantsTwoSets(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		CompareQuerySets(rec, map[string]*thirdSet{"sqlite": &sqliteThird})
	}()
	<-done
	if !rec.fatal {
		t.Error("CompareQuerySets with one set did not fail")
	}
}

type recorder struct {
	testing.TB
	errs  []string
	fatal bool
}

// Fatalf records the failure and ends the calling goroutine, as testing's does.
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.fatal = true
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func TestLintRefusesMergeAndVisibleOnlyRoleChecks(t *testing.T) {
	t.Parallel()
	bad := []struct{ sql, want string }{
		{"MERGE dbo.Runs AS t USING (SELECT @p1 AS Id) AS s ON t.RunId = s.Id WHEN MATCHED THEN UPDATE SET SubjectHead = 1;", "MERGE is refused"},
		{"WITH s AS (SELECT 1 AS Id) MERGE dbo.Runs AS t USING s ON t.RunId = s.Id WHEN MATCHED THEN DELETE;", "MERGE is refused"},
		{"IF DATABASE_PRINCIPAL_ID(N'ledger_maintenance') IS NULL EXEC(N'CREATE ROLE [ledger_maintenance];');", "DATABASE_PRINCIPAL_ID"},
	}
	for _, c := range bad {
		got := LintTSQL(c.sql, nil)
		found := false
		for _, f := range got {
			found = found || strings.Contains(f.Msg, c.want)
		}
		if !found {
			t.Errorf("LintTSQL(%q) = %v; want a finding containing %q", c.sql, got, c.want)
		}
	}
	good := []string{
		"SELECT r.RunId FROM dbo.Runs AS r INNER MERGE JOIN dbo.Projects AS p ON p.ProjectId = r.ProjectId;",
		"BEGIN TRY\n IF DATABASE_PRINCIPAL_ID(N'r') IS NULL EXEC(N'CREATE ROLE [r];');\nEND TRY\nBEGIN CATCH\n IF ERROR_NUMBER() NOT IN (15023, 15247)\n BEGIN\n THROW;\n END;\nEND CATCH;",
	}
	for _, sql := range good {
		if got := LintTSQL(sql, nil); len(got) != 0 {
			t.Errorf("LintTSQL(%q) = %v; want none", sql, got)
		}
	}
}
