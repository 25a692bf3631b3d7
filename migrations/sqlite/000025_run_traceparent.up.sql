-- migration: additive
-- The W3C traceparent an enqueue carried (DESIGN.md 5b "Traces where teams already look",
-- issue 31): the run chain's trace joins the caller's. A nullable column: an older binary
-- still works.
ALTER TABLE Runs ADD COLUMN TraceParent TEXT NULL;
