package runs

// mssqlQueries is filled in by the SQL Server query set (see the review notes there).
var mssqlQueries = queries{}
