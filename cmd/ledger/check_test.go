package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// reportLines splits `ledger check` output into its check lines and its verdict.
func reportLines(t *testing.T, out string) (checks map[string]string, verdict string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("report too short: %q", out)
	}
	checks = map[string]string{}
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("report line %q has no status, name and detail", l)
		}
		checks[f[1]] = l
	}
	return checks, lines[len(lines)-1]
}

func TestCheckPassesOnAMigratedDatabase(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustCLI(t, "migrate", "--db", db, "up")
	code, out, errs := cli(t, "check", "--db", db)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
	checks, verdict := reportLines(t, out)
	for _, name := range []string{"database-file", "journal-mode", "durability", "foreign-keys", "schema"} {
		line, ok := checks[name]
		if !ok {
			t.Fatalf("no %s line in %q", name, out)
		}
		if !strings.HasPrefix(line, "ok ") || strings.Contains(line, "fix:") {
			t.Fatalf("%s: %q", name, line)
		}
	}
	if len(checks) != 5 || verdict != "sqlite database ready to serve: 5 checks, none failed" {
		t.Fatalf("checks %v, verdict %q", checks, verdict)
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustCLI(t, "migrate", "--db", db, "up")
	mustCLI(t, "migrate", "--db", db, "down", "1")
	code, out, errs := cli(t, "check", "--db", db, "--json")
	if code != checkExitFailed || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var got struct {
		Dialect string `json:"dialect"`
		Purpose string `json:"purpose"`
		OK      *bool  `json:"ok"`
		Checks  []struct {
			Name     string `json:"name"`
			Required *bool  `json:"required"`
			Status   string `json:"status"`
			Detail   string `json:"detail"`
			Fix      string `json:"fix"`
		} `json:"checks"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if got.Dialect != "sqlite" || got.Purpose != "serve" || got.OK == nil || *got.OK || len(got.Checks) != 5 {
		t.Fatalf("report %+v", got)
	}
	for _, c := range got.Checks {
		if c.Required == nil || !*c.Required || c.Detail == "" {
			t.Fatalf("check %+v", c)
		}
		want := "ok"
		if c.Name == "schema" {
			want = "fail"
			if !strings.Contains(c.Fix, "ledger migrate up") {
				t.Fatalf("the schema check's fix: %q", c.Fix)
			}
		}
		if c.Status != want {
			t.Fatalf("%s: status %q, want %q", c.Name, c.Status, want)
		}
	}
}

func TestCheckFailsWithTheFixOnEachLine(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	mustCLI(t, "migrate", "--db", db, "up")
	mustCLI(t, "migrate", "--db", db, "down", "2")
	code, out, errs := cli(t, "check", "--db", db)
	if code != checkExitFailed || errs != "" {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, errs, out)
	}
	checks, verdict := reportLines(t, out)
	if line := checks["schema"]; !strings.HasPrefix(line, "FAIL ") || !strings.Contains(line, "fix: run `ledger migrate up`") {
		t.Fatalf("schema line %q", line)
	}
	if verdict != "sqlite database not ready to serve: 1 of 5 checks failed" {
		t.Fatalf("verdict %q", verdict)
	}
	// Checked for a migration, the schema is the migration's business.
	code, out, _ = cli(t, "check", "--db", db, "--for", "migrate")
	if code != 0 {
		t.Fatalf("check --for migrate: exit %d\n%s", code, out)
	}
	checks, verdict = reportLines(t, out)
	if _, ok := checks["schema"]; ok || verdict != "sqlite database ready to migrate: 4 checks, none failed" {
		t.Fatalf("check --for migrate:\n%s", out)
	}
}

func TestCheckReportsAMissingFileWithoutCreatingIt(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	code, out, errs := cli(t, "check", "--db", db)
	if code != checkExitFailed || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	checks, _ := reportLines(t, out)
	if line := checks["database-file"]; !strings.HasPrefix(line, "FAIL ") || !strings.Contains(line, db) || !strings.Contains(line, "fix:") {
		t.Fatalf("report %q", out)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("ledger check created the database")
	}
}

func TestCheckCannotRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"UnknownPurpose", []string{"--for", "deploy"}, "serve or migrate"},
		{"StrayArgument", []string{"now"}, "unexpected argument"},
		{"UnknownFlag", []string{"--nope"}, "nope"},
		{"GuidConversionOff", []string{"--db", "sqlserver://u:secret@127.0.0.1:1?database=ledger&guid+conversion=false"}, "guid conversion=false"},
		{"NoServer", []string{"--db", "sqlserver://u:secret@127.0.0.1:1?database=ledger&dial+timeout=2"}, "cannot check"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"check"}, c.args...)
			if c.name != "GuidConversionOff" && c.name != "NoServer" {
				args = append([]string{"check", "--db", tempDB(t)}, c.args...)
			}
			code, out, errs := cli(t, args...)
			if code != checkExitCannotRun {
				t.Fatalf("exit %d, want %d; stderr %q", code, checkExitCannotRun, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "ledger check: ") || !strings.Contains(errs, c.says) || out != "" {
				t.Fatalf("stdout %q, stderr %q", out, errs)
			}
			if strings.Contains(errs, "secret") {
				t.Fatalf("the error shows the password: %q", errs)
			}
		})
	}
}

func TestCheckHelp(t *testing.T) {
	t.Parallel()
	code, out, errs := cli(t, "check", "--help")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, flag := range []string{"--db", "--for", "--json"} {
		if !strings.Contains(out, flag) {
			t.Fatalf("check --help does not list %s:\n%s", flag, out)
		}
	}
}
