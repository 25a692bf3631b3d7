package sqldb

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The security policy is changed by several migrations (000008 creates it, 000010 adds a
// table, 000013 drops and recreates it around ALTER FUNCTION). No server runs here, so this
// replays the policy statements of every up (and 000013's down) in order and checks what
// SQL Server would end with.

var (
	policyStmt = regexp.MustCompile(`(?is)\b(CREATE|ALTER|DROP)\s+SECURITY\s+POLICY\s+\[dbo\]\.\[TenantPolicy\]`)
	predicate  = regexp.MustCompile(`(?is)\b(ADD|DROP)\s+(FILTER|BLOCK)\s+PREDICATE\s+(?:(\[dbo\]\.\[\w+\]\(\[\w+\]\))\s+)?ON\s+\[dbo\]\.\[(\w+)\](\s+(?:AFTER|BEFORE)\s+(?:INSERT|UPDATE|DELETE))?`)
	tableDef   = regexp.MustCompile(`(?is)CREATE\s+TABLE\s+\[dbo\]\.\[(\w+)\]\s*\((.*?)\n\);`)
)

// policyState is the set of predicates in force, each "KIND Table [operation]" mapped to
// the function call it uses.
type policyState map[string]string

func predicateKey(kind, table, op string) string {
	return strings.TrimSpace(strings.ToUpper(kind) + " " + table + " " + strings.ToUpper(strings.Join(strings.Fields(op), " ")))
}

// replayPolicy applies the policy statements of sql to st, in order.
func replayPolicy(t *testing.T, st policyState, sql string) policyState {
	t.Helper()
	text := strings.ReplaceAll(StripComments(sql), "''", "'")
	stmts := policyStmt.FindAllStringSubmatchIndex(text, -1)
	for i, m := range stmts {
		end := len(text)
		if i+1 < len(stmts) {
			end = stmts[i+1][0]
		}
		body := text[m[1]:end]
		switch strings.ToUpper(text[m[2]:m[3]]) {
		case "DROP":
			st = policyState{}
			continue
		case "CREATE":
			if len(st) != 0 {
				t.Fatalf("CREATE SECURITY POLICY while the policy exists (Msg 2714)")
			}
		}
		for _, p := range predicate.FindAllStringSubmatch(body, -1) {
			key := predicateKey(p[2], p[4], p[5])
			if strings.EqualFold(p[1], "ADD") {
				if _, dup := st[key]; dup {
					t.Fatalf("predicate %s added twice", key)
				}
				st[key] = p[3]
			} else {
				if _, ok := st[key]; !ok {
					t.Fatalf("predicate %s dropped but not there", key)
				}
				delete(st, key)
			}
		}
	}
	return st
}

func (st policyState) keys() []string {
	var k []string
	for key := range st {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// blockOnlyTables have TenantId but no FILTER predicate, on purpose, with the reason.
var blockOnlyTables = map[string]string{
	"ReleaseOwners": "000012: release ids are global, so the ownership check must see another tenant's row",
}

func TestTenantPolicyCoversEveryTenantTable(t *testing.T) {
	t.Parallel()
	st := policyState{}
	var tenantTables []string
	var before13, after13 []string
	tables := map[string]bool{}
	for _, name := range upFiles(t) {
		text := readMigration(t, name)
		if strings.HasPrefix(name, "000013_") {
			before13 = st.keys()
		}
		for _, m := range tableDef.FindAllStringSubmatch(StripComments(text), -1) {
			tables[m[1]] = true
			if strings.Contains(m[2], "[TenantId]") {
				tenantTables = append(tenantTables, m[1])
			}
		}
		st = replayPolicy(t, st, text)
		if strings.HasPrefix(name, "000013_") {
			after13 = st.keys()
		}
		// SQL Server refuses a predicate on a table that does not exist (yet).
		missing := map[string]bool{}
		for key := range st {
			if table := strings.Fields(key)[1]; !tables[table] {
				missing[table] = true
			}
		}
		for table := range missing {
			t.Errorf("after %s the policy names %s, which no migration up to it creates", name, table)
		}
	}
	if len(tenantTables) < 12 {
		t.Fatalf("found %d tables with TenantId: the scan is broken", len(tenantTables))
	}
	for _, tb := range tenantTables {
		want := []string{predicateKey("BLOCK", tb, "AFTER INSERT"), predicateKey("BLOCK", tb, "AFTER UPDATE")}
		if _, ok := blockOnlyTables[tb]; !ok {
			want = append(want, predicateKey("FILTER", tb, ""))
		}
		for _, want := range want {
			if _, ok := st[want]; !ok {
				t.Errorf("after every migration the policy lacks %s", want)
			}
		}
	}
	for key, fn := range st {
		if fn != "[dbo].[fn_TenantAccess]([TenantId])" {
			t.Errorf("predicate %s calls %q, not [dbo].[fn_TenantAccess]([TenantId])", key, fn)
		}
	}
	if before13 == nil {
		t.Fatal("no migration 000013 found")
	}
	// 000013 rebuilds the policy: exactly the predicates that were in force, and its
	// guard counts them.
	if !slices.Equal(before13, after13) {
		t.Errorf("000013 does not recreate the policy it drops:\nbefore %v\nafter  %v", before13, after13)
	}
	guard := regexp.MustCompile(`sys\.security_predicates WHERE object_id = OBJECT_ID\(N'dbo\.TenantPolicy'\)\) <> (\d+)`)
	for _, f := range []string{"000013_maintenance_role.up.sql", "000013_maintenance_role.down.sql"} {
		m := guard.FindStringSubmatch(readMigration(t, f))
		if m == nil || m[1] != strconv.Itoa(len(before13)) {
			t.Errorf("%s: its guard expects %v predicates, the policy before it has %d", f, m, len(before13))
		}
	}
}

func TestMaintenanceRoleMigrationDownRestoresThePolicy(t *testing.T) {
	t.Parallel()
	up := readMigration(t, "000013_maintenance_role.up.sql")
	down := readMigration(t, "000013_maintenance_role.down.sql")
	st := policyState{}
	for _, name := range upFiles(t) {
		if strings.HasPrefix(name, "000013_") {
			break
		}
		st = replayPolicy(t, st, readMigration(t, name))
	}
	before := st.keys()
	st = replayPolicy(t, st, up)
	st = replayPolicy(t, st, down)
	if after := st.keys(); !slices.Equal(before, after) {
		t.Fatalf("up then down changed the policy:\nbefore %v\nafter  %v", before, after)
	}
	// The function: the down restores 000007's body, the up adds the role to the bypass.
	fn007 := functionBody(t, readMigration(t, "000007_tenant_security_function.up.sql"))
	if got := functionBody(t, down); got != fn007 {
		t.Fatalf("the down's function differs from 000007's:\n%s\n---\n%s", got, fn007)
	}
	upFn := functionBody(t, up)
	for _, want := range []string{"IS_MEMBER(N'ledger_maintenance') = 1", "IS_MEMBER(N'db_owner') = 1", "USER_NAME() = N'dbo'",
		"CAST(SESSION_CONTEXT(N'LedgerMaintenance') AS int) = 1", "WITH SCHEMABINDING"} {
		if !strings.Contains(upFn, want) {
			t.Errorf("000013's function lacks %s", want)
		}
	}
	if !strings.Contains(up, "IF DATABASE_PRINCIPAL_ID(N'ledger_maintenance') IS NULL") || strings.Contains(StripComments(down), "DROP ROLE") {
		t.Error("the up must create the role only when missing, and the down must keep it")
	}
	for _, f := range []string{up, down} {
		if !strings.Contains(f, "SET XACT_ABORT ON;\nBEGIN TRANSACTION;") || !strings.HasSuffix(strings.TrimSpace(f), "COMMIT TRANSACTION;") {
			t.Error("000013 is not one all-or-nothing transaction")
		}
	}
}

// functionBody returns the predicate function's text from CREATE or ALTER FUNCTION to its
// end, unwrapped from EXEC and with white space normalised.
func functionBody(t *testing.T, sql string) string {
	t.Helper()
	text := strings.ReplaceAll(StripComments(sql), "''", "'")
	// It ends at the ';' that closes its EXEC string, or the file.
	re := regexp.MustCompile(`(?is)(?:CREATE|ALTER)\s+FUNCTION\s+\[dbo\]\.\[fn_TenantAccess\](.*?);\s*(?:'\);|$)`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no fn_TenantAccess in the migration")
	}
	return strings.Join(strings.Fields(m[1]), " ")
}
