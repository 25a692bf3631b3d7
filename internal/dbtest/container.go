package dbtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcmssql "github.com/testcontainers/testcontainers-go/modules/mssql"
)

// startContainer starts SQL Server in Docker when an engine answers. The container lives
// until the test process ends (testcontainers' reaper removes it).
func startContainer() (dsn, why string) {
	if os.Getenv("LEDGER_TEST_NO_DOCKER") != "" {
		return "", "LEDGER_TEST_MSSQL_DSN is not set and LEDGER_TEST_NO_DOCKER is"
	}
	// testcontainers panics when it finds no Docker host at all; report that as a skip.
	defer func() {
		if p := recover(); p != nil {
			dsn, why = "", fmt.Sprintf("LEDGER_TEST_MSSQL_DSN is not set and no Docker engine is reachable (%v)", p)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	provider, err := testcontainers.ProviderDocker.GetProvider()
	if err != nil {
		return "", "LEDGER_TEST_MSSQL_DSN is not set and no Docker engine is reachable (" + firstLine(err) + ")"
	}
	defer provider.Close()
	if err := provider.Health(ctx); err != nil {
		return "", "LEDGER_TEST_MSSQL_DSN is not set and no Docker engine is reachable (" + firstLine(err) + ")"
	}
	c, err := tcmssql.Run(ctx, "mcr.microsoft.com/mssql/server:2022-CU14-ubuntu-22.04",
		tcmssql.WithAcceptEULA(), tcmssql.WithPassword("Ledger-Test-1"))
	if err != nil {
		return "", "Docker answered but SQL Server did not start (" + firstLine(err) + ")"
	}
	conn, err := c.ConnectionString(ctx, "database=master")
	if err != nil {
		return "", "SQL Server started but gave no connection string (" + firstLine(err) + ")"
	}
	if err := createDatabase(ctx, conn); err != nil {
		return "", "SQL Server started but the test database could not be made (" + firstLine(err) + ")"
	}
	return strings.Replace(conn, "database=master", "database=ledger_test", 1), ""
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func createDatabase(ctx context.Context, masterDSN string) error {
	db, err := openRaw(ctx, masterDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `IF DB_ID(N'ledger_test') IS NULL CREATE DATABASE ledger_test COLLATE `+testCollation+`;`)
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	_, err = db.ExecContext(ctx, `ALTER DATABASE ledger_test SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE;`)
	return err
}
