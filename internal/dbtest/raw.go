package dbtest

import (
	"context"
	"database/sql"

	_ "github.com/microsoft/go-mssqldb" // the sqlserver driver
)

func openRaw(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
