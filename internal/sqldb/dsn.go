package sqldb

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// dsnForms is what a refused DSN is told to be instead.
const dsnForms = "give a SQLite file path (./data/ledger.db, or a file: URI) or sqlserver://user:pass@host:1433?database=ledger"

// looksLikeURL matches a DSN that starts with a URL scheme: "scheme://…", or "scheme:…@…"
// (credentials without the slashes). Such a DSN is never taken for a file path: a mistyped
// scheme would otherwise create a directory named after it and a file named after the rest,
// password included, and report success.
var looksLikeURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:(//|[^/]*@)`)

// IsSQLServer reports whether a DSN names SQL Server.
func IsSQLServer(dsn string) bool { return strings.HasPrefix(dsn, "sqlserver://") }

// SQLitePath returns the file a SQLite DSN names: a path, "file:" followed by a path or URI
// path, or the older "sqlite://path". Any other URL-looking DSN is an error naming the
// accepted forms; the error shows the scheme only, never the rest (it may hold a password).
func SQLitePath(dsn string) (string, error) {
	if dsn == "" {
		return "", errors.New("empty database path; " + dsnForms)
	}
	if rest, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		return rest, nil
	}
	if strings.HasPrefix(dsn, "file:") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("malformed file: URI; " + dsnForms)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return "", errors.New("a file: URI takes no ?options (ledger sets the SQLite options itself; see --sqlite-sync)")
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("file: URI names host %q; SQLite opens local files only", u.Host)
		}
		path := u.Path
		if u.Opaque != "" {
			if path, err = url.PathUnescape(u.Opaque); err != nil {
				return "", errors.New("malformed file: URI; " + dsnForms)
			}
		}
		if path == "" {
			return "", errors.New("the file: URI names no file; " + dsnForms)
		}
		return path, nil
	}
	if m := looksLikeURL.FindString(dsn); m != "" {
		scheme, _, _ := strings.Cut(m, ":")
		if strings.EqualFold(scheme, "sqlserver") {
			return "", errors.New("write the scheme sqlserver:// in lower case")
		}
		return "", fmt.Errorf("database scheme %q is not supported; %s", scheme, dsnForms)
	}
	return dsn, nil
}

// CheckDSN refuses a DSN that is neither SQL Server nor a SQLite path, without opening
// anything.
func CheckDSN(dsn string) error {
	if IsSQLServer(dsn) {
		return nil
	}
	_, err := SQLitePath(dsn)
	return err
}
