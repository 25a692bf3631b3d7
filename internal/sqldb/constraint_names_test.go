package sqldb

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// MapError tells a FOREIGN KEY 547 from a CHECK 547 by the constraint's name (FK_ or CK_),
// never by the English message, so every constraint the migrations make must be named,
// with the prefix of its kind. SQL Server's generated names (FK__…, CK__…) would keep the
// prefix too, but a name chosen here is also what an operator reads in the error.

var constraintPrefix = map[string]string{
	"FOREIGN KEY": "FK_",
	"CHECK":       "CK_",
	"PRIMARY KEY": "PK_",
	"UNIQUE":      "UQ_",
	"DEFAULT":     "DF_",
}

var (
	namedConstraint = regexp.MustCompile(`(?i)\bCONSTRAINT\s+\[?(\w+)\]?\s+(FOREIGN\s+KEY|CHECK|PRIMARY\s+KEY|UNIQUE|DEFAULT|REFERENCES)\b`)
	// A constraint definition: CHECK followed by its condition, FOREIGN KEY, or a
	// column-level REFERENCES (one that does not follow FOREIGN KEY (...)).
	checkDef      = regexp.MustCompile(`(?i)\bCHECK\s*\(`)
	foreignKeyDef = regexp.MustCompile(`(?i)\bFOREIGN\s+KEY\b`)
	referencesDef = regexp.MustCompile(`(?i)\bREFERENCES\b`)
	defaultDef    = regexp.MustCompile(`(?i)\bDEFAULT\s*\(`)
)

// lintConstraintNames returns one finding per unnamed or misnamed constraint in sql.
func lintConstraintNames(sql string) []string {
	text := StripComments(sql)
	var findings []string
	named := map[int]bool{} // offsets of keywords that a CONSTRAINT [name] introduces
	for _, m := range namedConstraint.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		kind := strings.ToUpper(strings.Join(strings.Fields(text[m[4]:m[5]]), " "))
		named[m[4]] = true
		if kind == "REFERENCES" {
			kind = "FOREIGN KEY"
		}
		if want := constraintPrefix[kind]; !strings.HasPrefix(name, want) {
			findings = append(findings, fmt.Sprintf("%s constraint %s is not named %s…", kind, name, want))
		}
	}
	for _, def := range []struct {
		kind string
		re   *regexp.Regexp
	}{{"CHECK", checkDef}, {"FOREIGN KEY", foreignKeyDef}} {
		for _, m := range def.re.FindAllStringIndex(text, -1) {
			if !named[m[0]] {
				findings = append(findings, fmt.Sprintf("unnamed %s constraint at %q", def.kind, snippet(text, m[0])))
			}
		}
	}
	for _, m := range referencesDef.FindAllStringIndex(text, -1) {
		// REFERENCES after FOREIGN KEY (cols) belongs to that constraint; a REFERENCES
		// right after a column definition is an inline, unnamed foreign key unless a
		// CONSTRAINT [name] introduced it.
		before := text[max(0, m[0]-200):m[0]]
		if named[m[0]] || foreignKeyDef.MatchString(before[strings.LastIndexAny(before, ",(")+1:]) ||
			regexp.MustCompile(`(?i)FOREIGN\s+KEY\s*\([^)]*\)\s*$`).MatchString(before) {
			continue
		}
		findings = append(findings, fmt.Sprintf("unnamed inline foreign key at %q", snippet(text, m[0])))
	}
	for _, m := range defaultDef.FindAllStringIndex(text, -1) {
		if !named[m[0]] && !seedDefault(text, m[0]) {
			findings = append(findings, fmt.Sprintf("unnamed DEFAULT at %q", snippet(text, m[0])))
		}
	}
	return findings
}

// seedDefault reports the one unnamed default the seed itself has (001's
// ExecutionAttempts.CorrectionCount, kept column for column): a default never raises 547.
func seedDefault(text string, at int) bool {
	line := text[strings.LastIndexByte(text[:at], '\n')+1 : at]
	return strings.Contains(line, "[CorrectionCount] int NOT NULL")
}

func snippet(text string, at int) string {
	end := min(len(text), at+60)
	return strings.Join(strings.Fields(text[max(0, at-40):end]), " ")
}

func TestMSSQLConstraintsAreNamedByKind(t *testing.T) {
	t.Parallel()
	constraints := 0
	for _, name := range upFiles(t) {
		text := readMigration(t, name)
		constraints += len(namedConstraint.FindAllString(StripComments(text), -1))
		for _, f := range lintConstraintNames(text) {
			t.Errorf("migrations/mssql/%s: %s", name, f)
		}
	}
	if constraints < 20 {
		t.Fatalf("found only %d named constraints in migrations/mssql: the scan is broken", constraints)
	}
}

func TestConstraintNameLintCatchesMistakes(t *testing.T) {
	t.Parallel()
	bad := []struct{ sql, want string }{
		{"CREATE TABLE t (a int, CONSTRAINT [Runs_Band] CHECK ([a] > 0));", "not named CK_"},
		{"CREATE TABLE t (a int, CHECK ([a] > 0));", "unnamed CHECK"},
		{"CREATE TABLE t (a int CHECK (a > 0));", "unnamed CHECK"},
		{"ALTER TABLE t ADD CONSTRAINT [T_Parent] FOREIGN KEY ([p]) REFERENCES [dbo].[P] ([id]);", "not named FK_"},
		{"ALTER TABLE t ADD FOREIGN KEY ([p]) REFERENCES [dbo].[P] ([id]);", "unnamed FOREIGN KEY"},
		{"CREATE TABLE t (p int NOT NULL REFERENCES [dbo].[P] ([id]));", "unnamed inline foreign key"},
		{"CREATE TABLE t (p int NOT NULL CONSTRAINT [P_ref] REFERENCES [dbo].[P] ([id]));", "not named FK_"},
		{"CREATE TABLE t (a int, CONSTRAINT [T_Key] PRIMARY KEY ([a]));", "not named PK_"},
		{"CREATE TABLE t (a int NOT NULL DEFAULT (0));", "unnamed DEFAULT"},
	}
	for _, c := range bad {
		got := strings.Join(lintConstraintNames(c.sql), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("lint of %q = %q, want %q", c.sql, got, c.want)
		}
	}
	good := []string{
		"CREATE TABLE t (a int, CONSTRAINT [PK_T] PRIMARY KEY ([a]), CONSTRAINT [CK_T_A] CHECK ([a] > 0));",
		"ALTER TABLE [dbo].[C] ADD CONSTRAINT [FK_C_P] FOREIGN KEY ([p]) REFERENCES [dbo].[P] ([id]);",
		"CREATE TABLE t (p int CONSTRAINT [FK_T_P] REFERENCES [dbo].[P] ([id]), CONSTRAINT [DF_T_P] DEFAULT (1) FOR p);",
		"ALTER TABLE t WITH CHECK CHECK CONSTRAINT [FK_T_P]; -- CHECK (x) in a comment",
		"    [CorrectionCount] int NOT NULL DEFAULT (0),",
	}
	for _, sql := range good {
		if f := lintConstraintNames(sql); len(f) > 0 {
			t.Errorf("lint of %q found %v", sql, f)
		}
	}
}
